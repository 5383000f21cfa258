import { fileURLToPath } from "node:url";

/**
 * A path inside the installed package (migrations/, package.json …), the same from the sources
 * and from the build: this module sits in src/, and the build puts every chunk directly in
 * dist/, both one level below the package root.
 */
export function packagePath(relative: string): string {
  return fileURLToPath(new URL(`../${relative}`, import.meta.url));
}
