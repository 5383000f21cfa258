// Types for the tests and the build, which share these edits with apply.mjs.
export interface Edit {
  before: string;
  after: string;
}
export interface Patch {
  package: string;
  versions: string[];
  files: string[];
  edits: Edit[];
}
export declare const PATCH_MARKER: string;
export declare const postgresRestartPatch: Patch;
export declare const postgresReleasePatch: Patch;
export declare const postgresBeginPatch: Patch;
export declare const postgresWriteTurnPatch: Patch;
export declare const patches: Patch[];
export declare function applyEdits(text: string, edits: Edit[]): { text: string; problems?: undefined } | { text?: undefined; problems: string[] };
export declare const patchedInBundle: { edit: string; pattern: RegExp }[];
