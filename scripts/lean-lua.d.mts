/** The Lua source without its comments, leading indentation and blank lines; a `#!` first line is kept as it is. */
export function leanLua(source: string): string
