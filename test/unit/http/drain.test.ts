import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { Drain, drainAware, onDrain, waitUnlessDraining } from "../../../src/http/drain.ts";

/** A long-poll that waits until its signal aborts, then says so; as every real wait, it looks at the signal first. */
function longPollApp(drain: Drain): Hono {
  const app = new Hono();
  app.use(drainAware(drain));
  app.get("/wait", async (c) =>
    c.json(
      await waitUnlessDraining(
        c,
        (signal) =>
          new Promise<string>((resolve) => (signal.aborted ? resolve("answered early") : signal.addEventListener("abort", () => resolve("answered early")))),
      ),
    ),
  );
  return app;
}

describe("Drain", () => {
  it("answers a waiting long-poll when draining begins, and one that comes after at once", async () => {
    const drain = new Drain();
    const app = longPollApp(drain);
    const waiting = app.request("/wait");
    expect(drain.draining).toBe(false);
    drain.begin();
    expect(drain.draining).toBe(true);
    expect(await (await waiting).json()).toBe("answered early");
    expect(await (await app.request("/wait")).json()).toBe("answered early");
  });

  it("keeps nothing of a wait that ended: what it registered is cancelled with it", async () => {
    const drain = new Drain();
    const app = new Hono();
    app.use(drainAware(drain));
    app.get("/quick", async (c) => c.json(await waitUnlessDraining(c, async () => "done")));
    for (let i = 0; i < 50; i++) expect(await (await app.request("/quick")).json()).toBe("done");
    let called = 0;
    drain.onBegin(() => called++);
    drain.begin();
    drain.begin();
    expect(called).toBe(1); // only its own: the fifty waits left nothing behind, and begin runs once
  });

  it("calls onDrain at once when draining has begun, and never once cancelled", async () => {
    const drain = new Drain();
    const app = new Hono();
    app.use(drainAware(drain));
    const calls: string[] = [];
    app.get("/stream", (c) => {
      const cancel = onDrain(c, () => calls.push("cancelled one"));
      cancel();
      onDrain(c, () => calls.push("kept one"));
      return c.body(null, 204);
    });
    app.get("/late", (c) => {
      onDrain(c, () => calls.push("late one"));
      return c.body(null, 204);
    });
    await app.request("/stream");
    drain.begin();
    expect(calls).toEqual(["kept one"]);
    await app.request("/late");
    expect(calls).toEqual(["kept one", "late one"]);
  });
});
