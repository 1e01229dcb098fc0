/** A small PNG decoder (8-bit RGB/RGBA, not interlaced: what Chromium writes) for checking screenshots. */

import zlib from "node:zlib";

export interface Image {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel. */
  pixels: Uint8Array;
}

export function decodePng(buffer: Buffer): Image {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (!buffer.subarray(0, 8).equals(signature)) throw new Error("not a PNG");
  let offset = 8;
  let width = 0;
  let height = 0;
  let colorType = 0;
  const idat: Buffer[] = [];
  while (offset < buffer.length) {
    const length = buffer.readUInt32BE(offset);
    const type = buffer.toString("latin1", offset + 4, offset + 8);
    const data = buffer.subarray(offset + 8, offset + 8 + length);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const bitDepth = data[8]!;
      colorType = data[9]!;
      const interlace = data[12]!;
      if (bitDepth !== 8 || (colorType !== 2 && colorType !== 6) || interlace !== 0)
        throw new Error(`unsupported PNG: depth ${bitDepth}, colour type ${colorType}, interlace ${interlace}`);
    } else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") break;
    offset += 12 + length;
  }
  const channels = colorType === 6 ? 4 : 3;
  const stride = width * channels;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const out = new Uint8Array(width * height * 4);
  let previous = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const current = new Uint8Array(stride);
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? current[x - channels]! : 0;
      const b = previous[x]!;
      const c = x >= channels ? previous[x - channels]! : 0;
      let value = line[x]!;
      if (filter === 1) value += a;
      else if (filter === 2) value += b;
      else if (filter === 3) value += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        value += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      current[x] = value & 0xff;
    }
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 4;
      out[o] = current[x * channels]!;
      out[o + 1] = current[x * channels + 1]!;
      out[o + 2] = current[x * channels + 2]!;
      out[o + 3] = channels === 4 ? current[x * channels + 3]! : 255;
    }
    previous = current;
  }
  return { width, height, pixels: out };
}

/** How many pixels are within `tolerance` of an RGB colour. */
export function countNear(image: Image, [r, g, b]: [number, number, number], tolerance = 24): number {
  let n = 0;
  for (let i = 0; i < image.pixels.length; i += 4) {
    if (Math.abs(image.pixels[i]! - r) <= tolerance && Math.abs(image.pixels[i + 1]! - g) <= tolerance && Math.abs(image.pixels[i + 2]! - b) <= tolerance) n++;
  }
  return n;
}

/** Distinct colours, quantised to 5 bits a channel. */
export function distinctColours(image: Image): number {
  const seen = new Set<number>();
  for (let i = 0; i < image.pixels.length; i += 4) seen.add(((image.pixels[i]! >> 3) << 10) | ((image.pixels[i + 1]! >> 3) << 5) | (image.pixels[i + 2]! >> 3));
  return seen.size;
}
