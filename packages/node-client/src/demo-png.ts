import { crc32, deflateSync } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/**
 * A small RGB PNG: a fake "screen" with a title bar and a diagonal gradient whose hue follows
 * `seed`, so consecutive demo screenshots differ. Generated instead of captured so the
 * simulator needs no display, no native module and no image file.
 */
export function renderDemoPng(width = 64, height = 40, seed = 0): Buffer {
  const rows: Buffer[] = [];
  const shift = Math.abs(Math.trunc(seed)) % 256;
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) {
      const titleBar = y < Math.max(2, Math.floor(height / 8));
      const offset = 1 + x * 3;
      row[offset] = titleBar ? 40 : (x * 4 + shift) % 256;
      row[offset + 1] = titleBar ? 40 : (y * 6) % 256;
      row[offset + 2] = titleBar ? 60 : (255 - shift + x + y) % 256;
    }
    rows.push(row);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: RGB
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
