/** Each `local UPPER_CASE = …` constant of a Lua source: numbers (`64`, `2 ^ 37`) and '…' strings. */
export function luaConstants(source: string): Record<string, number | string>
/** The bytes of a struct.pack format of fixed-size fields ('>dI4B'). */
export function structSize(format: string): number
