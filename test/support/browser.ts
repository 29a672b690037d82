/**
 * Debian's Chromium for the browser tests (installed by scripts/ensure-chromium.sh and .ci/run;
 * nothing downloads a browser), launched headless with the flags every browser test needs: no
 * sandbox (the CI machine's containers have none), no GPU, and none of its calls home.
 */
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
