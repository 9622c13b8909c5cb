// @fleet/session-store is a service: it is run (main.ts, cli.ts), not imported. Nothing is exported.
export {};
