// The edits that keep a PostgreSQL restart from crashing the process (see README.md here). One
// list, used twice: apply.mjs patches node_modules for development (tests run the sources), and
// scripts/build.mjs applies the same edits while bundling, so the shipped JavaScript carries the
// fix whatever the installer does with install scripts.

/** Marks every patched line; the build's tests look for it in dist/. */
export const PATCH_MARKER = "countersign-patch";

export const postgresRestartPatch = {
  package: "postgres",
  versions: ["3.4.9"],
  files: ["src/connection.js", "cjs/src/connection.js", "cf/src/connection.js"],
  edits: [
    {
      // porsager/postgres#1154, #1208 (fix proposed in #1168/#1209, unmerged): nextWrite() runs
      // after closed() nulled the socket and throws from a setImmediate or 'data' callback, an
      // uncaughtException that kills the process. Settle the pending queries with
      // CONNECTION_CLOSED instead, as closed() does, so callers get an error they can catch.
      before: "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n",
      after:
        "  function nextWrite(fn) {\n" +
        `    if (!socket) { // ${PATCH_MARKER}: null socket (porsager/postgres#1208)\n` +
        "      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n" +
        "      chunk = nextWriteTimer = null\n" +
        "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
        "      return false\n" +
        "    }\n" +
        "    const x = socket.write(chunk, fn)\n",
    },
    {
      // closed() cancels a scheduled write but keeps its handle and bytes: the next connection
      // would then never schedule a flush (the handle is not null) and would send the dead
      // connection's bytes ahead of its startup message. The queries they belonged to were
      // rejected by closed() already.
      before: "    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)\n",
      after: `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null // ${PATCH_MARKER}\n    socket.removeListener('data', data)\n`,
    },
  ],
};

export const postgresReleasePatch = {
  package: "postgres",
  versions: ["3.4.9"],
  files: ["src/index.js", "cjs/src/index.js", "cf/src/index.js"],
  edits: [
    {
      // A reserved connection that closes (a restart, a terminated backend) is moved to the
      // pool's closed list by onclose(); release() then put it on the open list regardless, so
      // every later reserve() and query handed out the dead connection and failed with
      // CONNECTION_CLOSED, for good (the pool never reconnected it). Leave a closed connection
      // to the pool, which reconnects closed connections on demand.
      // Only this reservation's own connection is released: once it closed, onclose() may have
      // reconnected it for another waiter already (or another reserve() may hold it), and
      // releasing that would clear their reservation and put a busy connection on the open list.
      before: "    c.reserved.release = true\n\n    const sql = Sql(handler)\n    sql.release = () => {\n      c.reserved = null\n      onopen(c)\n    }\n",
      after: `    c.reserved.release = true\n    const mine = c.reserved // ${PATCH_MARKER}\n\n    const sql = Sql(handler)\n    sql.release = () => {\n      if (c.reserved !== mine) return // ${PATCH_MARKER}: closed meanwhile; the pool has it back\n      c.reserved = null\n      onopen(c)\n    }\n`,
    },
    {
      // A reserved connection that closes left what its holder queued on it waiting for good:
      // closed() fails the query in flight and those sent, but not the ones the reservation holds
      // back in its own queue (behind a statement that is described before it runs, as every
      // named statement is on a new connection), and a query the holder sends after the close
      // went to the connection object, which the pool may have reconnected for someone else (its
      // bytes ahead of the new start-up, or outside the holder's transaction). A transaction on a
      // reserved connection then never ended: under a restart, approvals hung unrecorded. Fail
      // both with CONNECTION_CLOSED, as closed() fails the rest.
      before: "    return sql\n\n    function handler(q) {\n      c.queue === full\n        ? queue.push(q)\n        : c.execute(q) || move(c, full)\n    }\n  }\n",
      after:
        `    c.onclose = (e) => { while (queue.length) queue.shift().reject(e) } // ${PATCH_MARKER}: queued, never sent\n` +
        "    return sql\n\n    function handler(q) {\n" +
        `      if (c.reserved !== mine) return q.reject(Errors.connection('CONNECTION_CLOSED', options)) // ${PATCH_MARKER}: closed meanwhile\n` +
        "      c.queue === full\n        ? queue.push(q)\n        : c.execute(q) || move(c, full)\n    }\n  }\n",
    },
  ],
};

export const postgresBeginPatch = {
  package: "postgres",
  versions: ["3.4.9"],
  files: ["src/index.js", "cjs/src/index.js", "cf/src/index.js"],
  edits: [
    {
      // begin() fails at once when its connection closes (its race), but the transaction's
      // callback runs on: what it sends next, and the driver's own COMMIT or ROLLBACK after it,
      // went to the connection object, which the pool may have reconnected for another caller
      // meanwhile: a statement of the lost transaction committed on its own, our COMMIT committed
      // their transaction early, our ROLLBACK rolled theirs back (all three reproduced). Once its
      // connection closed, the transaction fails what it had queued and everything it sends.
      before: "    let savepoints = 0\n      , connection\n      , prepare = null\n",
      after: `    let savepoints = 0\n      , connection\n      , prepare = null\n      , lost = null // ${PATCH_MARKER}\n`,
    },
    {
      before: "        new Promise((_, reject) => connection.onclose = reject)\n",
      after: `        new Promise((_, reject) => connection.onclose = e => { // ${PATCH_MARKER}: nothing more goes out on it\n          lost = e\n          reject(e)\n          while (queries.length) queries.shift().reject(e)\n        })\n`,
    },
    {
      before: "      function handler(q) {\n        q.catch(e => uncaughtError || (uncaughtError = e))\n        c.queue === full\n",
      after: `      function handler(q) {\n        q.catch(e => uncaughtError || (uncaughtError = e))\n        if (lost) return q.reject(lost) // ${PATCH_MARKER}: its connection closed\n        c.queue === full\n`,
    },
  ],
};

export const postgresWriteTurnPatch = {
  package: "postgres",
  versions: ["3.4.9"],
  files: ["src/connection.js", "cjs/src/connection.js", "cf/src/connection.js"],
  edits: [
    {
      // A connection's queued bytes went to the socket at once when they reached 1 KiB, the rest
      // at the end of the event loop's turn (setImmediate). A decision's write statement is 3.5
      // KiB, so it left alone and its COMMIT, queued a few microtasks later, in a second write;
      // on 2 cores the first write woke the PostgreSQL backend, which took the process's core
      // and ran the statement before the COMMIT was even queued: 1.4–1.8 ms between the two
      // writes of one click (socket trace, 2026-12-04), and under intake the same preemption in
      // the middle of every request's JavaScript. Flushing once a turn (up to 64 KiB) sends what
      // a turn queued in one write, after its JavaScript ran.
      before: "    if (fn || chunk.length >= 1024)\n",
      after: `    if (fn || chunk.length >= 65536) // ${PATCH_MARKER}: one write a turn\n`,
    },
  ],
};

export const postgresPipelinedBeginPatch = {
  package: "postgres",
  versions: ["3.4.9"],
  files: ["src/index.js", "cjs/src/index.js", "cf/src/index.js"],
  edits: [
    {
      // begin() awaits BEGIN's answer before it calls back, so a transaction's first statements
      // wait a round trip they do not need: BEGIN cannot fail on a working connection, and the
      // statements pipelined behind it run in the transaction it opens. `sql.begin('pipelined',
      // fn)` calls back as soon as BEGIN has its connection, with the queries fn sends queued
      // behind it on that connection, and gives fn BEGIN's answer as `sql.began`: fn must await
      // it before it writes anything, since statements sent after a BEGIN that failed would run
      // outside any transaction (Database.transactionEndingWith awaits it with its first reads,
      // before its body runs). Any other options string behaves as before.
      before: "    try {\n      await sql.unsafe('begin ' + options.replace(/[^a-z ]/ig, ''), [], { onexecute }).execute()\n",
      after:
        "    try {\n" +
        `      if (options === 'pipelined') { // ${PATCH_MARKER}: pipelined BEGIN\n` +
        "        let onassigned\n" +
        "        const assigned = new Promise(r => onassigned = r)\n" +
        "        began = sql.unsafe('begin', [], { onexecute: c => { onexecute(c); onassigned() } }).execute()\n" +
        "        began.catch(e => { // nothing more goes out in a transaction that never began, nor waits to\n" +
        "          lost = lost || e\n" +
        "          while (queries.length) queries.shift().reject(e)\n" +
        "        })\n" +
        "        await Promise.race([assigned, began])\n" +
        "        move(connection, reserved) // the pool moved it to full behind BEGIN; what fn sends goes out behind it\n" +
        "      } else\n" +
        "      await sql.unsafe('begin ' + options.replace(/[^a-z ]/ig, ''), [], { onexecute }).execute()\n",
    },
    {
      before: "      , lost = null // countersign-patch\n",
      after: `      , lost = null // countersign-patch\n      , began = Promise.resolve() // ${PATCH_MARKER}: BEGIN's answer, for a pipelined transaction\n`,
    },
    {
      before: "      sql.savepoint = savepoint\n",
      after: `      sql.savepoint = savepoint\n      sql.began = began // ${PATCH_MARKER}\n`,
    },
  ],
};

export const patches = [postgresRestartPatch, postgresReleasePatch, postgresBeginPatch, postgresWriteTurnPatch, postgresPipelinedBeginPatch];

/**
 * Applies a patch's edits to one file's text. Idempotent: an edit already present is skipped.
 * Returns the problems instead of a half-patched text when the file is not what the patch
 * was written for, so a driver upgrade that moved the code cannot silently drop the fix.
 */
export function applyEdits(text, edits) {
  let patched = text;
  const problems = [];
  for (const edit of edits) {
    if (patched.includes(edit.after)) continue;
    if (patched.split(edit.before).length !== 2) {
      problems.push(`does not contain, exactly once, the code the patch expects:\n${edit.before}`);
      continue;
    }
    patched = patched.replace(edit.before, edit.after);
  }
  return problems.length > 0 ? { problems } : { text: patched };
}

/**
 * What the patched code looks like once esbuild has bundled it (comments, and so the marker,
 * are dropped): the build and its tests check the shipped JavaScript against these.
 */
export const patchedInBundle = [
  { edit: "release() leaves a closed reserved connection to the pool", pattern: /const mine = c\.reserved;[\s\S]{0,200}if \(c\.reserved !== mine\) return;\s*c\.reserved = null;\s*onopen\d*\(c\)/ },
  { edit: "a reserved connection that closes fails its queued queries", pattern: /c\.onclose = \(e\) => \{\s*while \(queue\d*\.length\)\s*queue\d*\.shift\(\)\.reject\(e\);?\s*\}/ },
  { edit: "a reserved connection refuses queries once it closed", pattern: /if \(c\.reserved !== mine\)\s*return q\.reject\(Errors\d*\.connection\("CONNECTION_CLOSED", options\d*\)\)/ },
  { edit: "begin() fails what its lost connection queued", pattern: /connection\d*\.onclose = \(e\) => \{\s*lost = e;\s*reject\(e\);\s*while \(queries\d*\.length\)\s*queries\d*\.shift\(\)\.reject\(e\);?\s*\}/ },
  { edit: "begin() refuses queries once its connection closed", pattern: /if \(lost\)\s*return q\.reject\(lost\);\s*c\.queue === full/ },
  { edit: "nextWrite returns on a null socket", pattern: /function nextWrite\(fn\) \{\s*if \(!socket\) \{/ },
  { edit: "a connection writes once a turn, up to 64 KiB", pattern: /if \(fn \|\| chunk\.length >= 65536\)/ },
  { edit: "begin('pipelined') calls back once BEGIN has its connection", pattern: /if \(options\d* === "pipelined"\) \{[\s\S]{0,400}?\.unsafe\("begin", \[\], \{ onexecute: \(c\d*\) => \{[\s\S]{0,200}?began\.catch\(\(e\d*\) => \{\s*lost = lost \|\| e\d*;\s*while \(queries\d*\.length\)\s*queries\d*\.shift\(\)\.reject\(e\d*\);?\s*\}\);[\s\S]{0,200}?move\d*\(connection\d*, reserved\d*\);/ },
  { edit: "closed() drops the dead socket's write", pattern: /clearImmediate\(nextWriteTimer\);\s*chunk = nextWriteTimer = null;\s*socket\.removeListener\("data", data\)/ },
];
