/** Where fleetlimit's warnings (a store outage, a doubtful option) go: console by default. */
export interface Logger {
  warn(message: string): void
  info?(message: string): void
}
