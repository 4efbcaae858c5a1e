// The CRC16 (XMODEM) of each byte value: the CRC of a key then takes one table lookup per byte, not eight shifts.
const CRC_OF_BYTE = new Uint16Array(256)
for (let byte = 0; byte < 256; byte++) {
  let crc = byte << 8
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  CRC_OF_BYTE[byte] = crc
}

const crcStep = (crc: number, byte: number) =>
  ((crc << 8) & 0xffff) ^ (CRC_OF_BYTE[((crc >>> 8) ^ byte) & 0xff] as number)

/**
 * The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag (the part inside the first `{…}`, when not
 * empty), or of the whole key, modulo 16384. Every key fleetlimit builds has the tenant as its hash tag. Every
 * Redis call on a Cluster finds its slot, so an ASCII tag is hashed from its character codes, with nothing
 * allocated; any other is hashed from its UTF-8 bytes.
 */
export function clusterSlot(key: string): number {
  const open = key.indexOf('{')
  const close = open === -1 ? -1 : key.indexOf('}', open + 1)
  const start = close > open + 1 ? open + 1 : 0
  const end = close > open + 1 ? close : key.length
  let crc = 0
  for (let i = start; i < end; i++) {
    const code = key.charCodeAt(i)
    if (code > 0x7f) return slotOfBytes(Buffer.from(key.slice(start, end)))
    crc = crcStep(crc, code)
  }
  return crc % 16_384
}

function slotOfBytes(bytes: Uint8Array): number {
  let crc = 0
  for (const byte of bytes) crc = crcStep(crc, byte)
  return crc % 16_384
}
