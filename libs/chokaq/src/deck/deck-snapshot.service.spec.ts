import { Logger } from '@nestjs/common';
import type { ChokaQAdmin } from '../admin/chokaq-admin.service';
import { DeckSnapshotService } from './deck-snapshot.service';
import type { ResolvedDeckOptions } from './deck-options';

/** A driver's error, with the schema, table, host and port a browser must never see. */
function driverError(): Error {
  const cause = Object.assign(
    new Error('relation "chokaq_prod".jobs_hot does not exist (db.internal:5432)'),
    { code: '42P01' },
  );
  return new Error('unavailable: getSummary failed: relation "chokaq_prod".jobs_hot', { cause });
}

describe('the Deck snapshot of a failed read', () => {
  it('tells the browser a stable code and a generic message, and logs the full text once', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const failing = () => Promise.reject(driverError());
      const admin = new Proxy({}, { get: () => failing }) as unknown as ChokaQAdmin;
      const service = new DeckSnapshotService(admin, { refreshMs: 60_000 } as ResolvedDeckOptions);
      const first = await service.current();
      const second = await service.current();
      for (const snapshot of [first, second]) {
        expect(snapshot).toMatchObject({ ok: false, code: '42P01' });
        expect(JSON.stringify(snapshot)).not.toMatch(/chokaq_prod|jobs_hot|db\.internal|5432/);
      }
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toContain('relation "chokaq_prod".jobs_hot');
    } finally {
      warn.mockRestore();
    }
  });
});
