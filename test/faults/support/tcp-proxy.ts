import { AddressInfo, createServer, Server, Socket } from 'node:net';

/**
 * A TCP proxy in front of the real database server, so a test can cut its own workers off without
 * touching the server, parallel test files, or a remote CHOKAQ_PG_URL.
 *
 * - `cut()`: destroys every piped socket pair and closes new connections at once (a refused path).
 * - `restore()`: forwards again. The listening port never changes, so the workers' URLs stay valid.
 * - `upstreamPorts()`: the local ports of the proxy's own connections to the server — exactly what
 *   `pg_stat_activity.client_port` shows for the backends behind this proxy, so those (and only
 *   those) can be terminated with `pg_terminate_backend`. `application_name` cannot be used: every
 *   ChokaQ storage sets `chokaq`, including other test files' in the same database.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  private down = false;
  /** Connections accepted while cut (each closed at once). */
  refused = 0;

  constructor(
    private readonly targetHost: string,
    private targetPort: number,
  ) {}

  /**
   * Forwards new connections to another port of the same host from now on (a failover's endpoint
   * moving to the promoted server, as an HA tool's virtual IP or proxy does); the open pairs stay
   * until they close.
   */
  retarget(port: number): void {
    this.targetPort = port;
  }

  /** Starts listening on 127.0.0.1 and an ephemeral port; resolves to that port. */
  async listen(): Promise<number> {
    const server = createServer((client) => this.accept(client));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return (server.address() as AddressInfo).port;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  get isDown(): boolean {
    return this.down;
  }

  /** Open socket pairs now. */
  get connections(): number {
    return this.pairs.size;
  }

  upstreamPorts(): number[] {
    return [...this.pairs]
      .map((p) => p.upstream.localPort)
      .filter((p): p is number => typeof p === 'number');
  }

  /** The outage: every piped connection dies, new ones are closed as soon as they arrive. */
  cut(): void {
    this.down = true;
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.pairs.clear();
  }

  restore(): void {
    this.down = false;
  }

  async close(): Promise<void> {
    this.cut();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    client.on('error', () => undefined);
    if (this.down) {
      this.refused++;
      client.destroy();
      return;
    }
    const upstream = new Socket();
    upstream.on('error', () => undefined);
    const pair = { client, upstream };
    this.pairs.add(pair);
    const drop = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', drop);
    upstream.on('close', drop);
    upstream.connect(this.targetPort, this.targetHost, () => {
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }
}
