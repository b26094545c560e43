/** A small PNG reader for tests: 8-bit RGB/RGBA, non-interlaced (what resvg writes), enough to check pixels. */
import { inflateSync } from 'node:zlib';

export class PNG {
  private constructor(
    readonly width: number,
    readonly height: number,
    private readonly channels: number,
    private readonly data: Buffer,
  ) {}

  static decode(buf: Buffer): PNG {
    if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
    let pos = 8;
    let width = 0;
    let height = 0;
    let channels = 4;
    const idat: Buffer[] = [];
    while (pos < buf.length) {
      const len = buf.readUInt32BE(pos);
      const type = buf.toString('latin1', pos + 4, pos + 8);
      const body = buf.subarray(pos + 8, pos + 8 + len);
      if (type === 'IHDR') {
        width = body.readUInt32BE(0);
        height = body.readUInt32BE(4);
        if (body[8] !== 8 || body[12] !== 0) throw new Error('only 8-bit non-interlaced PNGs');
        channels = body[9] === 6 ? 4 : body[9] === 2 ? 3 : 0;
        if (!channels) throw new Error(`colour type ${body[9]} not supported`);
      } else if (type === 'IDAT') idat.push(body);
      pos += 12 + len;
    }
    const raw = inflateSync(Buffer.concat(idat));
    const stride = width * channels;
    const out = Buffer.alloc(height * stride);
    for (let y = 0; y < height; y++) {
      const filter = raw[y * (stride + 1)]!;
      const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
      for (let x = 0; x < stride; x++) {
        const a = x >= channels ? out[y * stride + x - channels]! : 0;
        const b = y > 0 ? out[(y - 1) * stride + x]! : 0;
        const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels]! : 0;
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        const paeth = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
        const pred = [0, a, b, (a + b) >> 1, paeth][filter]!;
        out[y * stride + x] = (line[x]! + pred) & 0xff;
      }
    }
    return new PNG(width, height, channels, out);
  }

  /** [r, g, b, a] at a pixel. */
  pixel(x: number, y: number): number[] {
    const i = (y * this.width + x) * this.channels;
    const px = [...this.data.subarray(i, i + this.channels)];
    return this.channels === 3 ? [...px, 255] : px;
  }
}
