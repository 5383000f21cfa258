// Types for the tests, which build the CLI through scripts/build.mjs.
export declare const ROOT: string;
export declare const DIST: string;
export declare const CLI_ENTRY: string;
export declare function buildCli(options?: { keepSupersededMs?: number }): Promise<void>;
export declare function buildClient(): void;
export declare function cliIsStale(): boolean;
