import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const chromiumAvailable = existsSync(CHROMIUM);
export const SCREENSHOTS = fileURLToPath(new URL("../../test-results/screenshots", import.meta.url));

if (!chromiumAvailable) {
  const message = `Chromium is not at ${CHROMIUM}: browser tests are SKIPPED. Install it (apt-get install -y chromium) or run .ci/run.`;
  if (process.env.CI === "true") throw new Error(`CI=true but ${message}`);
  console.warn(`\n!!! ${message}\n`);
}

/** Debian's Chromium, headless, with nothing reaching out to the (absent) internet. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
  });
}

export function screenshotPath(name: string): string {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return path.join(SCREENSHOTS, `${name}.png`);
}
