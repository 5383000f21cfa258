/**
 * The floor of the click-ack figure: a bare Bolt 5.1 app in HTTP mode (Bolt's own HTTPReceiver,
 * the signing secret checked as Bolt checks it) whose only listener acks. No database, no
 * Countersign code. Run: node --import tsx bench/bare-bolt.ts PORT SIGNING_SECRET SLACK_API_URL
 * Prints "bare bolt listening on PORT" once it takes requests.
 */
import bolt from "@slack/bolt";

const [port, signingSecret, slackApiUrl] = process.argv.slice(2);
if (!port || !signingSecret || !slackApiUrl) {
  console.error("usage: bare-bolt.ts PORT SIGNING_SECRET SLACK_API_URL");
  process.exit(2);
}
const app = new bolt.App({
  signingSecret,
  token: "xoxb-test-token",
  // As the product does: auth.test once at init() (against the emulator). With
  // tokenVerificationEnabled: false instead, Bolt 5.1 calls auth.test before every event.
  deferInitialization: true,
  clientOptions: { slackApiUrl },
  logLevel: bolt.LogLevel.ERROR,
});
await app.init();
app.action(/.*/, async ({ ack }) => {
  await ack();
});
await app.start(Number(port));
console.log(`bare bolt listening on ${port}`);
process.on("SIGINT", () => {
  void app.stop().then(() => process.exit(0));
});
