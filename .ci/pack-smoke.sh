#!/usr/bin/env bash
# Packs Countersign as `npm publish` would, installs the tarball into an empty directory as a user
# would (its declared dependencies from the npm cache `npm ci` filled, or the registry), and there
# uses it as a new user would: the command, `start` to ready and back down on Ctrl-C, the
# PostgreSQL driver, the client from plain Node against that server, and a strict TypeScript
# consumer. Any failure names its step and exits 1.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/countersign-pack-XXXXXX")
server=""
step=""
started=$SECONDS

cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill -KILL -- "-$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "pack smoke: FAILED at step: $step" >&2; [ -f "$work/start.log" ] && { echo "--- countersign start output:" >&2; cat "$work/start.log" >&2; }; exit 1' ERR
begin() { step="$1"; echo "== pack smoke: $step"; }
fail() { echo "pack smoke: $1" >&2; false; }

# Waits (polling, bounded) until a command succeeds; the bound is generous because CI machines are loaded.
wait_for() {
  local seconds=$1; shift
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}

begin "npm pack (prepack builds dist/ and the PGlite template)"
npm pack --pack-destination "$work" --silent >"$work/pack.log" 2>&1 || { cat "$work/pack.log" >&2; false; }
tarball=$(ls "$work"/countersign-*.tgz)
listing=$(tar tzf "$tarball")
for wanted in package/dist/cli.js package/dist/client/index.js package/dist/client/index.d.ts package/dist/client/openai-agents.d.ts \
  package/migrations/meta/_journal.json package/templates/pglite-data.tar.gz package/countersign.example.yml package/manifest.yml \
  package/LICENSE package/README.md package/CHANGELOG.md package/examples/README.md; do
  grep -qx "$wanted" <<<"$listing" || fail "the tarball lacks $wanted"
done
grep -q '^package/docs/.' <<<"$listing" || fail "the tarball lacks docs/"
if grep -E '^package/(src|test|bench|scripts)/' <<<"$listing"; then fail "the tarball carries development files (above)"; fi
echo "   $(basename "$tarball"): $(du -k "$tarball" | cut -f1) KiB, $(wc -l <<<"$listing") files"

begin "npm install the tarball into an empty directory, preferring the npm cache"
# As a user's install, it resolves each dependency's range to the newest release in it, which
# may be newer than the lockfile's (so not in the cache `npm ci` filled): those, and the
# metadata npm ci never fetches, come from the registry.
mkdir "$work/app"
cd "$work/app"
printf '{ "name": "countersign-pack-smoke", "private": true, "type": "module" }\n' >package.json
npm install --prefer-offline --no-audit --no-fund "$tarball" >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; false; }
echo "   $(grep -o 'added [0-9]* packages' "$work/install.log")"
# npm 11 names each installed package whose install scripts (prepare included) it has not been told to allow.
if grep -Ei 'allowScripts|install-scripts|prepare' "$work/install.log"; then fail "the install warned about Countersign's scripts (above)"; fi

begin "the installed package carries its docs, examples and license"
installed=node_modules/countersign
for dir in docs examples; do [ -n "$(ls -A "$installed/$dir" 2>/dev/null)" ] || fail "$installed/$dir is missing or empty"; done
grep -q "Apache License" "$installed/LICENSE" || fail "$installed/LICENSE is not the Apache License"

begin "npx countersign --help"
help=$(npx --offline countersign --help)
grep -q "countersign start" <<<"$help" || fail "--help did not print the commands: $help"

begin "countersign migrate loads the PostgreSQL driver (against a closed port, so it stops at connecting)"
# A module missing from the install would fail the import before any connection is tried.
code=0
migrate=$(DATABASE_URL="postgres://countersign@127.0.0.1:9/countersign" node_modules/.bin/countersign migrate 2>&1) || code=$?
[ "$code" -eq 1 ] && grep -q "cannot reach PostgreSQL" <<<"$migrate" || fail "migrate did not fail at connecting (exit $code): $migrate"

begin "countersign start (the installed bin), to ready"
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
# The bin npx ran above, started directly: npx answers a SIGINT with its own exit code 130,
# which would hide countersign's. Its own process group, so the SIGINT below reaches the
# server and its executor child together, as Ctrl-C in a terminal does.
COUNTERSIGN_DATA_DIR="$work/data" PORT=$port setsid node_modules/.bin/countersign start >"$work/start.log" 2>&1 &
server=$!
# -s: the log may not exist yet when the first look comes (the background job opens it).
wait_for 180 grep -qs "Ctrl-C stops everything" "$work/start.log" || fail "start did not print its ready lines within 180 s"
grep -q "executor: pid" "$work/start.log" || fail "start did not start its executor"

begin "plain node imports countersign/client and submits a plan to that server"
COUNTERSIGN_URL="http://127.0.0.1:$port" COUNTERSIGN_AGENT_KEY=$(cat "$work/data/demo-agent.key") node --input-type=module -e "
  import { Countersign, CountersignError } from 'countersign/client';
  const client = new Countersign({ url: process.env.COUNTERSIGN_URL, key: process.env.COUNTERSIGN_AGENT_KEY });
  const plan = await client.submitPlan({ title: 'pack smoke', actions: [{ kind: 'http.json', target: 'contacts', path: '/contacts/1', op: 'merge', body: { email: 'smoke@example.com' } }] });
  const again = await client.getPlan(plan.id);
  if (again.status !== 'pending') throw new Error('expected a pending plan, got ' + again.status);
  const refused = await client.getPlan('no-such-plan').then(() => undefined, (err) => err);
  if (!(refused instanceof CountersignError)) throw new Error('an unknown plan was not a CountersignError: ' + refused);
  console.log('   plan ' + plan.id + ' pending; unknown plan refused with ' + refused.code);
"

begin "Ctrl-C stops start with exit 0"
kill -INT -- "-$server"
wait_for 60 bash -c "! kill -0 $server 2>/dev/null" || fail "start was still running 60 s after SIGINT"
code=0
wait "$server" || code=$?
server=""
[ "$code" -eq 0 ] || fail "start exited with $code after SIGINT"

begin "a strict TypeScript consumer compiles against countersign/client (skipLibCheck false)"
cat >consumer.ts <<'EOF'
import { Countersign, CountersignError, verifyWebhook, type PlanView } from "countersign/client";

const client = new Countersign({ url: "http://localhost:3000", key: "csk_example" });
export async function propose(): Promise<string> {
  const plan: PlanView = await client.submitPlan({
    title: "Update a contact",
    actions: [{ kind: "http.json", target: "contacts", path: "/contacts/1", op: "merge", body: { email: "a@example.com" } }],
  });
  const outcome = await client.waitForOutcome(plan.id, { timeoutMs: 1000 });
  const status: string = outcome.status;
  return status;
}
export function isRefusal(err: unknown): string | undefined {
  return err instanceof CountersignError ? err.code : undefined;
}
export const check: typeof verifyWebhook = verifyWebhook;
// The types are real, not `any`: a plan without actions does not compile.
// @ts-expect-error actions is required
void client.submitPlan({ title: "no actions" });
EOF
node "$repo/node_modules/typescript/bin/tsc" --strict --skipLibCheck false --module nodenext --moduleResolution nodenext --target es2022 --noEmit consumer.ts

echo "== pack smoke: passed in $((SECONDS - started)) s"
