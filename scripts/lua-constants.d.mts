/** Each `local UPPER_CASE = …` constant of a Lua source: numbers (`64`, `2 ^ 37`) and '…' strings. */
export function luaConstants(source: string): Record<string, number | string>
/** The bytes of a struct.pack format of fixed-size fields ('>dI4B'). */
export function structSize(format: string): number
/**
 * lua/sliding-log.lua's layout constants, after checking them against the struct formats they size: the generator
 * writes them to sliding-log-layout.generated.ts. Throws, naming the constant, when they disagree.
 */
export function slidingLogLayout(source: string): {
  headerBytes: number
  cachedEntries: number
  entryBytes: number
  wideEntryBytes: number
  wideAboveWindowUs: number
  compactAt: number
  maxReleaseTail: number
}
