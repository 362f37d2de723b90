import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

/** A Chromium binary for playwright-core: `CHROMIUM_PATH`, else one on PATH (Debian's `chromium`); undefined when none. */
export function findChromium(): string | undefined {
  const candidates = [
    process.env.CHROMIUM_PATH,
    ...(process.env.PATH ?? '').split(delimiter).flatMap((dir) => NAMES.map((name) => join(dir, name))),
    '/usr/lib/chromium/chromium',
  ];
  return candidates.find((path) => {
    if (!path) return false;
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
