// Chromium's compositor as ground truth for paint times (paint-compositor.spec.js): the frames
// DevTools' screencast (CDP Page.startScreencast) takes of what the compositor drew, each with
// its planned display time (`metadata.timestamp`, seconds since the epoch), and in them the
// answer box compared pixel by pixel with the empty box. Only Chromium has a screencast:
// Firefox and WebKit are checked in-page (engines.spec.js).

/**
 * Starts recording `page`'s compositor frames. Every frame is acknowledged at once (DevTools
 * stops sending frames while too many are unacknowledged). `stop()` resolves with the frames:
 * `{ epochMs, data }`, data a base64 PNG (lossless: a JPEG's blocks could blur a change).
 */
export async function screencast(page) {
  const cdp = await page.context().newCDPSession(page);
  const frames = [];
  cdp.on('Page.screencastFrame', (f) => {
    frames.push({ epochMs: f.metadata.timestamp * 1000, data: f.data, width: f.metadata.deviceWidth });
    cdp.send('Page.screencastFrameAck', { sessionId: f.sessionId }).catch(() => {});
  });
  await cdp.send('Page.startScreencast', { format: 'png', everyNthFrame: 1 });
  return {
    async stop() {
      await cdp.send('Page.stopScreencast');
      await cdp.detach();
      return frames;
    },
  };
}

/**
 * Decodes `frames` in `decoder` (a page of its own, after the recording: decoding costs no
 * time in the measured one) and returns per frame a signature of the `rect` (CSS px) region:
 * an FNV-1a hash of its pixels and the count of non-white pixels.
 */
export async function boxSignatures(decoder, frames, rect) {
  const out = [];
  for (let i = 0; i < frames.length; i += 16) {
    const batch = frames.slice(i, i + 16).map((f) => ({ data: f.data, width: f.width }));
    out.push(
      ...(await decoder.evaluate(
        async ({ batch, rect }) => {
          const sigs = [];
          for (const f of batch) {
            const bytes = Uint8Array.from(atob(f.data), (c) => c.charCodeAt(0));
            const img = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
            const scale = img.width / f.width; // image px per CSS px (DPR 1: 1)
            const c = new OffscreenCanvas(img.width, img.height);
            const g = c.getContext('2d');
            g.drawImage(img, 0, 0);
            const [x, y, w, h] = [rect.x, rect.y, rect.width, rect.height].map((v) => Math.round(v * scale));
            const px = g.getImageData(x, y, w, h).data;
            let hash = 0x811c9dc5;
            let ink = 0;
            for (let k = 0; k < px.length; k += 4) {
              if (px[k] < 250 || px[k + 1] < 250 || px[k + 2] < 250) ink++;
              hash = Math.imul(hash ^ (px[k] | (px[k + 1] << 8) | (px[k + 2] << 16)), 16777619) >>> 0;
            }
            sigs.push({ hash, ink });
          }
          return sigs;
        },
        { batch, rect },
      )),
    );
  }
  return out;
}

/**
 * The compositor's account of an answer on the page clock (ms, performance.now()): frames in
 * display order, `empty` the box before `start` (the request start), then
 *  - `first`: [last frame still showing the empty box, first frame showing anything else];
 *  - `last`: [last frame not yet showing the final box, first frame showing it for good];
 *  - `frameMs`: the median interval between frames (one vsync when every frame came).
 * `null` fields when the recording does not show it.
 */
export function compositorTruth(frames, sigs, timeOrigin, start) {
  const fs = frames.map((f, i) => ({ t: f.epochMs - timeOrigin, ...sigs[i] })).sort((a, b) => a.t - b.t);
  const before = fs.filter((f) => f.t < start);
  if (!before.length || fs.length < 3) return { first: null, last: null, frameMs: null, frames: fs.length };
  const empty = before[before.length - 1].hash;
  const i = fs.findIndex((f) => f.t >= start && f.hash !== empty);
  const fin = fs[fs.length - 1].hash;
  let j = fs.length - 1;
  while (j > 0 && fs[j - 1].hash === fin) j--;
  const gaps = fs.slice(1).map((f, k) => f.t - fs[k].t).sort((a, b) => a - b);
  return {
    first: i > 0 ? [fs[i - 1].t, fs[i].t] : null,
    last: j > 0 && fin !== empty ? [fs[j - 1].t, fs[j].t] : null,
    frameMs: gaps[Math.floor(gaps.length / 2)],
    frames: fs.length,
    ink: fs[fs.length - 1].ink,
  };
}
