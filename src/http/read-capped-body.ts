import type { IncomingMessage } from "node:http";

export type CappedBody = { ok: true; body: Buffer } | { ok: false; tooLarge: true };

/**
 * Reads a request body before anyone is authenticated, keeping at most `maxBytes`: past that it
 * stops reading at once and says so, without buffering (or draining) the rest. The stream is
 * paused, not destroyed, so the 413 can still be written; the HTTP server then drops the
 * connection. Reads the Node request directly where there is one (@hono/node-server's
 * `env.incoming`), because a web stream wrapped around it would keep pulling into its queue.
 */
export function readCappedBody(source: IncomingMessage | ReadableStream<Uint8Array> | null, maxBytes: number): Promise<CappedBody> {
  if (!source) return Promise.resolve({ ok: true, body: Buffer.alloc(0) });
  return source instanceof ReadableStream ? readWebStream(source, maxBytes) : readIncoming(source, maxBytes);
}

function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<CappedBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      incoming.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        done();
        incoming.pause();
        chunks.length = 0;
        resolve({ ok: false, tooLarge: true });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve({ ok: true, body: Buffer.concat(chunks, size) });
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const onClose = () => {
      done();
      reject(new Error("the client closed the connection before the body ended"));
    };
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onError);
    incoming.on("close", onClose);
    if (incoming.readableEnded) onEnd();
  });
}

async function readWebStream(stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<CappedBody> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { ok: true, body: Buffer.concat(chunks, size) };
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return { ok: false, tooLarge: true };
    }
    chunks.push(value);
  }
}
