import {
  archiveShipped,
  archiveVariants,
  claimShipped,
  claimVariants,
} from '../../bench/statement-cost';

/**
 * bench/statement-cost.ts builds its variants from the PostgreSQL goldens; importing it builds
 * them (it throws when a golden lost the part a variant removes). Each variant must be a real,
 * smaller statement, so a golden that changed shape cannot turn a comparison into A against A.
 */
describe('statement-cost variants', () => {
  it.each([
    ...Object.entries(claimVariants).map(([name, text]) => [name, text, claimShipped] as const),
    ...Object.entries(archiveVariants).map(([name, text]) => [name, text, archiveShipped] as const),
  ])('%s is a smaller statement than the one shipped', (_name, variant, shipped) => {
    expect(variant.length).toBeLessThan(shipped.length);
    expect(variant).toMatch(/^WITH /);
    expect(variant).toMatch(/RETURNING|SELECT [a-z.]*id/);
  });

  it('keeps the claim and archive texts the store sends as its baseline', () => {
    expect(claimShipped).toContain('FOR UPDATE SKIP LOCKED');
    expect(archiveShipped).toContain('INSERT INTO "chokaq".jobs_archive');
  });
});
