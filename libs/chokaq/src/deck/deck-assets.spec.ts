import { DeckAssets } from './deck-assets';

describe('the Deck page shell', () => {
  it('writes its <base href> as an escaped attribute value', () => {
    const page = new DeckAssets().page(`/x"><script>alert('b')</script>&/`).body.toString('utf8');
    expect(page).toContain(
      '<base href="/x&#34;&#62;&#60;script&#62;alert(&#39;b&#39;)&#60;/script&#62;&#38;/" />',
    );
    expect(page).not.toContain('<script>alert');
  });
});
