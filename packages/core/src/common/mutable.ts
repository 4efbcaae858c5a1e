/** `T` with its readonly properties writable: for an object filled in by plain assignments before it is shared. */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] }
