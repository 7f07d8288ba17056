/** Reads server-sent events from a fetch body, as the Deck's page does (for the HTTP suites). */
export interface SseEvent {
  type: string;
  data: unknown;
}

export interface SseStream {
  events: SseEvent[];
  /** Resolves when `condition` holds for the events so far (bounded by `timeoutMs`). */
  until(condition: (events: SseEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
  /** The response's headers. */
  headers: Headers;
  status: number;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  const waiters = new Set<() => void>();
  if (res.ok && res.body) {
    void (async () => {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let type = 'message';
            const data: string[] = [];
            for (const line of block.split('\n')) {
              if (line.startsWith('event:')) type = line.slice(6).trim();
              else if (line.startsWith('data:')) data.push(line.slice(5).trim());
            }
            if (data.length) events.push({ type, data: JSON.parse(data.join('\n')) });
            for (const w of waiters) w();
          }
        }
      } catch {
        // aborted
      }
    })();
  }
  return {
    events,
    headers: res.headers,
    status: res.status,
    close: () => controller.abort(),
    until: (condition, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        if (condition(events)) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`SSE condition not met within ${timeoutMs} ms (${events.length} events)`),
          );
        }, timeoutMs);
        const check = (): void => {
          if (condition(events)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
      }),
  };
}
