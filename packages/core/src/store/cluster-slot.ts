/**
 * The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag (the part inside the first `{…}`, when not
 * empty), or of the whole key, modulo 16384. Every key fleetlimit builds has the tenant as its hash tag.
 */
export function clusterSlot(key: string): number {
  const open = key.indexOf('{')
  const close = open === -1 ? -1 : key.indexOf('}', open + 1)
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key
  let crc = 0
  for (const byte of Buffer.from(hashed)) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16_384
}
