import type { ChokaQLogger } from '../../interfaces/chokaq-logger.interface';
import type { Client, Notification } from 'pg';
import { toError } from '../../common/error-text';
import { jittered } from '../../common/jitter';
import { logEvent } from '../../common/log-events';

/** Longest wait between two reconnect attempts, in ms. */
const MAX_RECONNECT_MS = 30_000;

/** What a {@link PgListener} is built from. */
export interface PgListenerOptions {
  /**
   * The channels to LISTEN on (plain identifiers, quoted here), each with the function called with
   * every payload sent on it. All of them share one session.
   */
  channels: ReadonlyMap<string, (payload: string) => void>;
  /** A new, unconnected client with the pool's connection options. */
  newClient: () => Client;
  /**
   * Called after a lost LISTEN session is re-established: notifications sent while it was down are
   * gone, so the subscriber should look for work once.
   */
  onReconnected: () => void;
  /** First wait before reconnecting, doubled per failed attempt up to 30 s (jittered ±20 %). */
  reconnectMs: number;
  logger: ChokaQLogger;
  /** Names the listener in logs, e.g. the schema. */
  label: string;
}

/**
 * One LISTEN session on a dedicated `pg.Client` for one or more channels, kept alive across
 * outages.
 *
 * LISTEN binds to a session, so when the server restarts, a proxy cuts the connection or a DBA
 * terminates the backend, the notifications stop and nothing in `pg` reconnects. The listener
 * notices (`error` or `end` on the client), logs once, and reconnects with backoff until it is
 * stopped, LISTENing on every channel again; the first success is logged once and reported through
 * `onReconnected`. Meanwhile workers still poll (and learn of cancel requests on their heartbeat),
 * so the loss costs latency, never jobs.
 */
export class PgListener {
  private client: Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;

  constructor(private readonly options: PgListenerOptions) {}

  /** Connects and LISTENs; rejects if the first attempt fails (nothing is left running then). */
  async start(): Promise<void> {
    this.client = await this.connect();
  }

  /** Stops reconnecting, UNLISTENs and ends the session. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const client = this.client;
    this.client = undefined;
    if (client === undefined) return;
    await client.query('UNLISTEN *').catch(() => undefined);
    await client.end().catch(() => undefined);
  }

  /** A connected client LISTENing on every channel, or a rejection (the client is ended). */
  private async connect(): Promise<Client> {
    const client = this.options.newClient();
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.lose(client, error);
    };
    client.on('error', (error: Error) => onLost(error));
    client.on('end', () => onLost());
    client.on('notification', (message: Notification) => {
      const onNotify = this.options.channels.get(message.channel);
      if (onNotify === undefined || message.payload === undefined) return;
      try {
        onNotify(message.payload);
      } catch (error) {
        const text = toError(error).message;
        logEvent(
          this.options.logger,
          'NotifyListenerFailed',
          `Listener of "${message.channel}" threw: ${text}`,
          { channel: message.channel, error: text },
        );
      }
    });
    try {
      await client.connect();
      // One round trip: a simple query may hold several statements, run as one implicit
      // transaction, so a session never LISTENs on only some channels (a reconnect restores all of
      // them or fails as a whole).
      await client.query(
        [...this.options.channels.keys()].map((channel) => `LISTEN "${channel}"`).join('; '),
      );
    } catch (error) {
      lost = true;
      await client.end().catch(() => undefined);
      throw error;
    }
    return client;
  }

  /** The session in use was lost: log once and start reconnecting. */
  private lose(client: Client, error: Error | undefined): void {
    this.client = undefined;
    void client.end().catch(() => undefined);
    if (this.stopped) return;
    logEvent(
      this.options.logger,
      'NotifyConnectionLost',
      `LISTEN connection of "${this.options.label}" lost` +
        (error ? `: ${error.message}` : '') +
        '. Workers poll until it is re-established.',
      { label: this.options.label, error: error?.message },
    );
    this.failures = 0;
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const delay = jittered(
      Math.min(MAX_RECONNECT_MS, this.options.reconnectMs * 2 ** this.failures),
      0.2,
    );
    this.timer = setTimeout(() => void this.reconnect(), delay);
    this.timer.unref();
  }

  private async reconnect(): Promise<void> {
    this.timer = undefined;
    if (this.stopped) return;
    let client: Client;
    try {
      client = await this.connect();
    } catch {
      this.failures++;
      if (!this.stopped) this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    logEvent(
      this.options.logger,
      'NotifyConnectionRestored',
      `LISTEN connection of "${this.options.label}" re-established after ${this.failures + 1} attempt(s)`,
      { label: this.options.label, attempts: this.failures + 1 },
    );
    this.failures = 0;
    this.options.onReconnected();
  }
}
