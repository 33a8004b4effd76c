/*
 * viewer.js - the interactive memory viewer of stprof's HTML report.
 *
 * Plain JavaScript on canvas, no library, nothing fetched: the report
 * (report_viewer*.c) embeds this file as it is, a JSON description of each
 * rank (#stpv-meta) and the objects as varint columns, deflated and base64
 * encoded (#stpv-bin; docs/report.md, "The interactive viewer", gives the
 * format).  What it draws:
 *
 *   - the active memory timeline of each rank: every embedded object of the
 *     space analyzed in depth stacked in allocation order (an object sits on
 *     those allocated before it that are still live, as PyTorch's
 *     memory_viz draws it), the objects the report did not embed as one grey
 *     band at the bottom; x is time or allocation events;
 *   - bands of iterations, phases and modules above it, a minimap below;
 *   - hover: size, class, user line and full call path, module, phase,
 *     lifetime; click pins an object and lists its accesses and findings;
 *   - the allocator state at the cursor: recorded segments, or a model's
 *     (PyTorch caching, expandable segments, BFC), with blocks and holes;
 *   - the findings and top call sites, linked to their objects.
 *
 * Level of detail: each pixel column draws the state at the moment of its
 * highest total in the column's span of events; the state is a segment tree
 * over the objects in allocation order (sums of live bytes), walked top
 * down and cut where a node is under 1.5 pixels tall: a column costs
 * O(pixels x log n) whatever the number of live objects, and moving from
 * one column to the next applies its events at O(log n) each.
 *
 * Invariants: object i is allocated at event oa[i] and freed at of[i]
 * (nev when never); oa is increasing (objects are numbered in allocation
 * order), so the stack order is the object order.  The state "at event e"
 * is after e has been applied; -1 is the empty state before the first.
 */
'use strict';
(function () {
  const LEFT = 64;          /* y axis margin, CSS px */
  const BAND_H = 14;        /* one band row */
  const POINT_HIT = 4;      /* px either side of a moment in a band (a refused request) */
  const AXIS_H = 16;        /* x axis labels */
  const MAIN_H = 260;       /* a rank's timeline when it is alone */
  const CLASS_COLOR = ['#4e79a7', '#f28e2b', '#59a14f', '#bab0ac', '#e15759', '#b07aa1', '#9c755f'];
  const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7',
    '#9c755f', '#86bcb6', '#f1ce63', '#d37295', '#a0cbe8', '#ffbe7d', '#8cd17d', '#b6992d', '#499894',
    '#fabfd2', '#d4a6c8', '#79706e'];
  const PHASE_COLOR = {forward: '#9ecae1', backward: '#fdae6b', optimizer: '#a1d99b', recompute: '#d4b9da'};
  const RESID_COLOR = 0xffd0d0d0;

  /* ------------------------------------------------------------ format */

  function fmtBytes(b) {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let k = 0;
    let v = b;
    while (Math.abs(v) >= 1024 && k < u.length - 1) {
      v /= 1024;
      k++;
    }
    if (k === 0) return `${Math.round(v)} B`;
    return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${u[k]}`;
  }
  function fmtNs(ns) {
    if (ns < 1e3) return `${Math.round(ns)} ns`;
    if (ns < 1e6) return `${(ns / 1e3).toPrecision(3)} us`;
    if (ns < 1e9) return `${(ns / 1e6).toPrecision(4)} ms`;
    return `${(ns / 1e9).toPrecision(4)} s`;
  }
  function fmtCount(n) {
    return Math.round(n).toLocaleString('en-US');
  }
  function plural(n, word) {
    return `${fmtCount(n)} ${word}${n === 1 ? '' : 's'}`;
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
  }
  function hexColor(c) {
    return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)];
  }
  /* 0xAABBGGRR, what a Uint32Array over ImageData holds on little-endian machines */
  function rgba32(r, g, b) {
    return (0xff000000 | (b << 16) | (g << 8) | r) >>> 0;
  }
  function css32(c) {
    return `rgb(${c & 255},${(c >>> 8) & 255},${(c >>> 16) & 255})`;
  }
  function shade(rgb, f) {
    return rgb.map(v => Math.max(0, Math.min(255, Math.round(f >= 0 ? v + (255 - v) * f : v * (1 + f)))));
  }
  function hashStr(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return h >>> 0;
  }
  function lowerBound(a, v, lo, hi) {
    lo = lo || 0;
    hi = hi === undefined ? a.length : hi;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (a[m] < v) lo = m + 1; else hi = m;
    }
    return lo;
  }
  function upperBound(a, v) {
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (a[m] <= v) lo = m + 1; else hi = m;
    }
    return lo;
  }
  /* a "nice" step of about range/n: 1, 2 or 5 times a power of ten (of two for bytes) */
  function niceStep(range, n, binary) {
    const raw = range / n;
    if (binary) {
      let p = 1;
      while (p * 2 <= raw) p *= 2;
      return p;
    }
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
  }

  /* ------------------------------------------------------------ data */

  function base64(s) {
    const lut = new Uint8Array(128);
    const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    for (let i = 0; i < 64; i++) lut[abc.charCodeAt(i)] = i;
    s = s.replace(/[^A-Za-z0-9+/]/g, '');
    const n = Math.floor(s.length * 3 / 4);
    const out = new Uint8Array(n);
    let j = 0;
    for (let i = 0; i + 3 < s.length + 3; i += 4) {
      const a = lut[s.charCodeAt(i)], b = lut[s.charCodeAt(i + 1) || 65];
      const c = lut[s.charCodeAt(i + 2) || 65], d = lut[s.charCodeAt(i + 3) || 65];
      const v = (a << 18) | (b << 12) | (c << 6) | d;
      if (j < n) out[j++] = v >>> 16;
      if (j < n) out[j++] = (v >>> 8) & 255;
      if (j < n) out[j++] = v & 255;
    }
    return out;
  }
  /* The blob: base64 decoded by the browser itself (a data: URL, nothing
   * leaves the page), then inflated by its DecompressionStream. */
  async function blob(text, enc) {
    let stream;
    try {
      stream = (await fetch('data:application/octet-stream;base64,' + text.replace(/\s+/g, ''))).body;
    } catch (e) {
      stream = new Blob([base64(text)]).stream();
    }
    if (enc === 'deflate') stream = stream.pipeThrough(new DecompressionStream('deflate'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  /* A column: [offset, count, codec, type]; codec u = unsigned varints,
   * z = zigzag varints, d = zigzag deltas; type f = Float64Array, u = Uint32Array. */
  function column(buf, spec) {
    if (!spec) return null;
    const off = spec[0], n = spec[1], codec = spec[2];
    const out = spec[3] === 'u' ? new Uint32Array(n) : new Float64Array(n);
    let p = off, acc = 0;
    for (let i = 0; i < n; i++) {
      let b = buf[p++];
      let v = b & 127;
      if (b & 128) {
        let mul = 128;
        do {
          b = buf[p++];
          v += (b & 127) * mul;
          mul *= 128;
        } while (b & 128);
      }
      if (codec !== 'u') v = v % 2 ? -(v + 1) / 2 : v / 2;
      if (codec === 'd') {
        acc += v;
        v = acc;
      }
      out[i] = v;
    }
    if (p > buf.length) throw new Error(`stprof viewer: column at ${off} runs past the data`);
    return out;
  }

  /* One trace: its objects, events and what the report said about it. */
  class Rank {
    constructor(meta, buf, index) {
      this.m = meta;
      this.index = index;
      const c = meta.cols;
      const n = this.n = meta.nobj;
      const ne = this.ne = meta.nev;
      this.et = column(buf, c.et);
      this.oa = column(buf, c.oa, 'u');
      const life = column(buf, c.ol);
      this.size = column(buf, c.os);
      const round = column(buf, c.or);
      this.cls = column(buf, c.oc);
      this.osi = column(buf, c.osi);
      this.node = column(buf, c.ok);
      this.mod = column(buf, c.om);
      this.addr = column(buf, c.oad);
      this.res = column(buf, c.res);
      /* call paths: a trie, innermost frame next to the root; node k > 0 has
       * the frame kf[k-1] and the parent k - kp[k-1] */
      this.kp = column(buf, c.kp);
      this.kf = column(buf, c.kf);
      for (let k = 1; k <= this.kp.length; k++) this.kp[k - 1] = k - this.kp[k - 1];
      /* call sites: detector index, user line (string + 1), live at the peak, allocations, class */
      this.sd = column(buf, c.sd);
      this.su = column(buf, c.su);
      this.sp = column(buf, c.sp);
      this.sn = column(buf, c.sn);
      this.sc = column(buf, c.sc);
      this.of = new Uint32Array(n);
      this.req = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        this.of[i] = life[i] ? this.oa[i] + life[i] : ne;
        this.req[i] = this.size[i] - round[i];
      }
      /* events: the object allocated (i) or freed (~i) by each */
      this.evo = new Int32Array(ne).fill(-0x7fffffff);
      for (let i = 0; i < n; i++) {
        if (this.oa[i] >= ne || (this.of[i] < ne && this.evo[this.of[i]] !== -0x7fffffff))
          throw new Error('stprof viewer: inconsistent event columns');
        this.evo[this.oa[i]] = i;
        if (this.of[i] < ne) this.evo[this.of[i]] = ~i;
      }
      /* total bytes after each event, and the highest */
      this.tot = new Float64Array(ne);
      let live = 0;
      this.peakEv = -1;
      this.max = 0;
      for (let e = 0; e < ne; e++) {
        const o = this.evo[e];
        if (o === -0x7fffffff) throw new Error(`stprof viewer: event ${e} has no object`);
        live += o >= 0 ? this.size[o] : -this.size[~o];
        const t = live + (this.res ? this.res[e] : 0);
        this.tot[e] = t;
        if (t > this.max) {
          this.max = t;
          this.peakEv = e;
        }
      }
      /* accesses (CSR), kept only when the trace has some */
      this.xn = column(buf, c.xn);
      this.xc = column(buf, c.xc);
      if (this.xn) {
        this.xs = new Uint32Array(n + 1);
        for (let i = 0; i < n; i++) this.xs[i + 1] = this.xs[i] + this.xn[i];
        this.xt = column(buf, c.xt);
        this.xa = column(buf, c.xa);
        this.xm = column(buf, c.xm);
      }
      /* allocator states: recorded segments and each model */
      this.segs = (meta.segs || []).map(s => ({
        name: s.name, key: s.key, note: s.note || '',
        addr: s.key === 'real' ? this.addr : column(buf, c[s.key + 'a']),
        extra: column(buf, c[s.key + 'b']),
        ev: column(buf, c[s.key + 'e']),
        at: column(buf, c[s.key + 'g']),
        sz: column(buf, c[s.key + 'z']),
        id: column(buf, c[s.key + 'i']),
      }));
      this.tree = null;
      this.strings = meta.strings;
      this.phaseBegins = (meta.phases || []).map(p => p[3]);
      this.iterBegins = (meta.iters || []).map(p => p[1]);
    }
    time(e) {
      return e < 0 ? 0 : this.et[Math.min(e, this.ne - 1)];
    }
    live(i, e) {
      return this.oa[i] <= e && e < this.of[i];
    }
    /* objects allocated at or before event e: [0, allocated(e)) */
    allocated(e) {
      return upperBound(this.oa, e);
    }
    /* the call path of object i, innermost frame first */
    frames(i) {
      const out = [];
      for (let k = this.node[i]; k > 0 && out.length < 256; k = this.kp[k - 1]) out.push(this.strings[this.kf[k - 1]]);
      return out.reverse();
    }
    site(i) {
      return this.osi[i];
    }
    siteLine(s) {
      return s >= 0 && s < this.su.length && this.su[s] ? this.strings[this.su[s] - 1] : '(no call path recorded)';
    }
    userLine(i) {
      return this.siteLine(this.osi[i]);
    }
    moduleName(i) {
      return this.mod && this.mod[i] ? this.strings[this.mod[i] - 1] : '';
    }
    phaseAt(t) {
      const ph = this.m.phases || [];
      let k = upperBound(this.phaseBegins, t) - 1;
      for (; k >= 0 && k >= upperBound(this.phaseBegins, t) - 4; k--)
        if (ph[k][3] <= t && t < ph[k][4]) return ph[k];
      return null;
    }
    iterationAt(t) {
      const it = this.m.iters || [];
      const k = upperBound(this.iterBegins, t) - 1;
      return k >= 0 && t < it[k][2] ? it[k] : null;
    }
    phaseText(t) {
      const p = this.phaseAt(t);
      const it = this.iterationAt(t);
      let s = p ? this.strings[p[0]] + (p[1] ? ` (micro-batch ${p[1]})` : '') : 'outside any phase';
      if (it) s += `, iteration ${it[0]}`;
      return s;
    }
  }

  /* Live bytes over the objects in allocation order: a tree of fan-out 32
   * whose nodes hold the sum of their live leaves, in total and by colour
   * (the colour of a node drawn whole is its largest share) and what of it
   * is highlighted.  Sums of integer sizes are exact in doubles, so an
   * event updates them by its delta: O(depth) = O(log32 n). */
  class Stack {
    constructor(R, ncolors) {
      this.R = R;
      this.nc = ncolors;
      this.levels = [];
      let m = R.n;
      do {
        m = Math.ceil(m / 32);
        this.levels.push({n: m, sum: new Float64Array(m), cb: new Float64Array(m * ncolors), hl: new Float64Array(m)});
      } while (m > 1);
      this.leaf = new Float64Array(R.n);
    }
    clear() {
      this.leaf.fill(0);
      for (const L of this.levels) {
        L.sum.fill(0);
        L.cb.fill(0);
        L.hl.fill(0);
      }
    }
    /* the state after event e */
    reset(e) {
      this.clear();
      const R = this.R, n = R.allocated(e);
      for (let i = 0; i < n; i++) if (R.of[i] > e) this.add(i, R.size[i]);
    }
    add(i, d) {
      const R = this.R, c = R.group[R.colIdx[i]], h = R.hlFlag ? R.hlFlag[i] : 0, nc = this.nc;
      this.leaf[i] += d;
      let node = i;
      for (const L of this.levels) {
        node >>= 5;
        L.sum[node] += d;
        L.cb[node * nc + c] += d;
        if (h) L.hl[node] += d;
      }
    }
    set(i, on) {
      this.add(i, on ? this.R.size[i] : -this.R.size[i]);
    }
    /* the colour of node k of level l drawn whole */
    color(l, k) {
      const L = this.levels[l], nc = this.nc, R = this.R;
      let best = 0;
      for (let c = 1; c < nc; c++) if (L.cb[k * nc + c] > L.cb[k * nc + best]) best = c;
      const hl = V.hl && V.hl.r === R.index;
      return (V.hl && !hl) || (hl && !(L.hl[k] > 0)) ? R.groupDim[best] : R.groupTable[best];
    }
  }

  /* ------------------------------------------------------------ state */

  const V = {
    ranks: [],
    meta: null,
    f0: 0, f1: 1,            /* the view, as fractions of the x domain */
    xmode: 'time',
    colorBy: 'class',
    yzoom: null,             /* [lo, hi] bytes, or null: fit to the view */
    hover: null,             /* {r, i} */
    pin: null,
    hl: null,                /* highlighted objects: {r, test(i), label} */
    cursor: {r: 0, e: -1},   /* the allocator-state moment */
    segKey: null,
    panels: [],
    tmax: 1,
  };

  /* ------------------------------------------------------------ colours */

  function objectColors(R) {
    const n = R.n;
    const idx = new Uint8Array(n);
    const by = V.colorBy;
    /* a small table of colours, and each object's index into it */
    const table = [];
    if (by === 'class') {
      /* class, a little lighter or darker by call site so neighbours part */
      for (const c of CLASS_COLOR) for (let k = 0; k < 5; k++) table.push(shade(hexColor(c), (k - 2) * 0.09));
    } else {
      for (const c of PALETTE) table.push(hexColor(c));
      table.push([200, 200, 200]);
    }
    R.colTable = new Uint32Array(table.map(rgb => rgba32(rgb[0], rgb[1], rgb[2])));
    R.dimTable = new Uint32Array(table.map(rgb => {
      const d = shade(rgb, 0.78);
      return rgba32(d[0], d[1], d[2]);
    }));
    /* the tree sums by group (a class, whatever its shade), drawn in the group's middle colour */
    const per = by === 'class' ? 5 : 1;
    R.ngroups = Math.ceil(table.length / per);
    R.group = new Uint8Array(table.length).map((x, t) => Math.floor(t / per));
    R.groupTable = new Uint32Array(R.ngroups).map((x, g) => R.colTable[Math.min(table.length - 1, g * per + (per >> 1))]);
    R.groupDim = new Uint32Array(R.ngroups).map((x, g) => R.dimTable[Math.min(table.length - 1, g * per + (per >> 1))]);
    const modHue = new Map();
    for (let i = 0; i < n; i++) {
      let t;
      if (by === 'site') {
        t = (Math.imul(R.osi[i] + 1, 2654435761) >>> 0) % PALETTE.length;
      } else if (by === 'module') {
        const m = R.mod[i];
        if (!m) t = PALETTE.length;
        else if ((t = modHue.get(m)) === undefined) modHue.set(m, t = hashStr(R.strings[m - 1]) % PALETTE.length);
      } else {
        const c = Math.min(R.cls[i] & 15, CLASS_COLOR.length - 1);
        t = c * 5 + (Math.imul(R.osi[i] + 7, 2654435761) >>> 0) % 5;
      }
      idx[i] = t;
    }
    R.colIdx = idx;
    R.tree = null; /* its sums by colour follow the table */
  }

  /* objects highlighted (a finding's, a call site's): a flag per object */
  function highlightFlags() {
    for (const R of V.ranks) {
      R.hlFlag = null;
      R.tree = null;
      if (V.hl && V.hl.r === R.index) {
        R.hlFlag = new Uint8Array(R.n);
        for (let i = 0; i < R.n; i++) R.hlFlag[i] = V.hl.test(i) ? 1 : 0;
      }
    }
  }

  function colorOf(R, i) {
    const t = R.colIdx[i];
    if (!V.hl) return R.colTable[t];
    return V.hl.r === R.index && R.hlFlag && R.hlFlag[i] ? R.colTable[t] : R.dimTable[t];
  }

  /* ------------------------------------------------------------ geometry */

  function domain(R) {
    return V.xmode === 'time' ? V.tmax : Math.max(R.ne, 1);
  }
  /* x (CSS px inside the plot) <-> domain units */
  function xToUnit(R, x, w) {
    const d = domain(R);
    return (V.f0 + (V.f1 - V.f0) * (x / w)) * d;
  }
  function unitToX(R, u, w) {
    const d = domain(R);
    return ((u / d) - V.f0) / (V.f1 - V.f0) * w;
  }
  function timeToUnit(R, t) {
    return V.xmode === 'time' ? t : lowerBound(R.et, t);
  }
  function eventToUnit(R, e) {
    return V.xmode === 'time' ? R.time(e) : e + 0.5;
  }
  /* first event at or after domain unit u */
  function unitToEvent(R, u) {
    return V.xmode === 'time' ? lowerBound(R.et, u) : Math.max(0, Math.min(R.ne, Math.ceil(u - 0.5)));
  }

  /* The event drawn in each column: the highest total in its span, or the
   * state before the span when it has no event. */
  function columns(R, W) {
    const lo = new Int32Array(W + 1);
    for (let c = 0; c <= W; c++) lo[c] = unitToEvent(R, xToUnit(R, c, W));
    const ev = new Int32Array(W);
    for (let c = 0; c < W; c++) {
      const a = lo[c], b = lo[c + 1];
      if (b <= a) {
        ev[c] = a - 1;
        continue;
      }
      let best = a;
      for (let e = a + 1; e < b; e++) if (R.tot[e] > R.tot[best]) best = e;
      ev[c] = best;
    }
    return ev;
  }

  /* ------------------------------------------------------------ timeline */

  function renderRank(P) {
    const R = P.R;
    const dpr = window.devicePixelRatio || 1;
    const cssW = Math.max(100, P.main.clientWidth - LEFT);
    const cssH = P.h;
    const W = Math.round(cssW * dpr), H = Math.round(cssH * dpr);
    P.main.width = Math.round(P.main.clientWidth * dpr);
    P.main.height = H;
    P.over.width = P.main.width;
    P.over.height = H;
    P.W = W;
    P.H = H;
    P.cssW = cssW;
    P.dpr = dpr;
    const ev = P.ev = columns(R, W);
    /* y range */
    let yhi = 1;
    if (V.yzoom) {
      P.ylo = V.yzoom[0];
      yhi = V.yzoom[1];
    } else {
      for (let c = 0; c < W; c++) if (ev[c] >= 0 && R.tot[ev[c]] > yhi) yhi = R.tot[ev[c]];
      if (V.shared) yhi = Math.max(yhi, V.sharedMax || 0);
      P.ylo = 0;
      yhi *= 1.06;
    }
    P.yhi = yhi;
    const k = P.k = H / (yhi - P.ylo);
    const ctx = P.main.getContext('2d');
    ctx.clearRect(0, 0, P.main.width, H);
    const img = ctx.createImageData(W, H);
    const px = new Uint32Array(img.data.buffer);
    if (!R.tree) R.tree = new Stack(R, R.ngroups);
    const T = R.tree, leaf = T.leaf, levels = T.levels, top = levels.length - 1;
    const ylo = P.ylo;
    const stL = new Int32Array(64 * 32), stN = new Int32Array(64 * 32), stO = new Float64Array(64 * 32);
    let cur = -2;
    const fill = (c, b0, b1, color) => {
      let y0 = Math.round(H - (b1 - ylo) * k), y1 = Math.round(H - (b0 - ylo) * k);
      if (y0 < 0) y0 = 0;
      if (y1 > H) y1 = H;
      if (y1 <= y0) {
        if (y0 >= H) return;
        y1 = y0 + 1;
      }
      for (let y = y0; y < y1; y++) px[y * W + c] = color;
    };
    for (let c = 0; c < W; c++) {
      const target = ev[c];
      if (target < 0) continue;
      if (cur === -2 || target < cur) {
        T.reset(target);
        cur = target;
      }
      while (cur < target) {
        cur++;
        const o = R.evo[cur];
        if (o >= 0) T.set(o, true); else T.set(~o, false);
      }
      const base = R.res ? R.res[target] : 0;
      if (base > 0) fill(c, 0, base, RESID_COLOR);
      /* top down: a node under 1.5 px is drawn whole, else its children */
      let sp = 0;
      stL[sp] = top;
      stN[sp] = 0;
      stO[sp++] = base;
      while (sp > 0) {
        sp--;
        const l = stL[sp], node = stN[sp];
        let off = stO[sp];
        const first = node * 32;
        if (l === 0) {
          const last = Math.min(first + 32, R.n);
          for (let i = first; i < last; i++) {
            const sz = leaf[i];
            if (sz <= 0) continue;
            if (off < yhi && off + sz > ylo) fill(c, off, off + sz, colorOf(R, i));
            off += sz;
          }
          continue;
        }
        const L = levels[l - 1], last = Math.min(first + 32, L.n);
        for (let j = first; j < last; j++) {
          const sz = L.sum[j];
          if (sz <= 0) continue;
          if (off < yhi && off + sz > ylo) {
            if (sz * k < 1.5) fill(c, off, off + sz, T.color(l - 1, j));
            else {
              stL[sp] = l - 1;
              stN[sp] = j;
              stO[sp++] = off;
            }
          }
          off += sz;
        }
      }
    }
    ctx.putImageData(img, Math.round(LEFT * dpr), 0);
    drawYAxis(P, ctx);
    drawXAxis(P);
    drawBands(P);
    drawOverlay(P);
  }

  function drawYAxis(P, ctx) {
    const dpr = P.dpr;
    ctx.save();
    ctx.scale(dpr, dpr);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, LEFT, P.h);
    ctx.strokeStyle = '#888';
    ctx.beginPath();
    ctx.moveTo(LEFT - 0.5, 0);
    ctx.lineTo(LEFT - 0.5, P.h);
    ctx.stroke();
    ctx.fillStyle = '#333';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'right';
    const span = P.yhi - P.ylo;
    const step = niceStep(span, 4, true);
    for (let v = Math.ceil(P.ylo / step) * step; v <= P.yhi; v += step) {
      const y = P.h - (v - P.ylo) * (P.h / span);
      if (y < 8) break;
      ctx.fillText(fmtBytes(v), LEFT - 5, Math.min(y + 4, P.h - 1));
      ctx.fillRect(LEFT - 4, Math.round(y), 4, 1);
    }
    ctx.restore();
  }

  function drawXAxis(P) {
    const R = P.R, c = P.axis, dpr = P.dpr;
    c.width = Math.round(c.clientWidth * dpr);
    c.height = Math.round(AXIS_H * dpr);
    const ctx = c.getContext('2d');
    ctx.scale(dpr, dpr);
    ctx.fillStyle = '#333';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'center';
    const u0 = xToUnit(R, 0, P.cssW), u1 = xToUnit(R, P.cssW, P.cssW);
    const step = niceStep(u1 - u0 || 1, Math.max(2, Math.floor(P.cssW / 110)), false);
    const labels = [];
    for (let u = Math.ceil(u0 / step) * step; u <= u1; u += step) {
      const x = LEFT + unitToX(R, u, P.cssW);
      const text = V.xmode === 'time' ? fmtNs(u) : `event ${fmtCount(u)}`;
      ctx.fillText(text, x, 12);
      ctx.fillRect(x, 0, 1, 3);
      labels.push(text);
    }
    P.axisLabels = labels;
    ctx.textAlign = 'left';
    ctx.fillStyle = '#888';
    ctx.fillText(V.xmode === 'time' ? 'time' : 'events', 4, 12);
  }

  /* band rows: iterations, phases, modules by depth (at most 3) */
  function bandRows(R) {
    const rows = [];
    const m = R.m;
    if (m.iters && m.iters.length)
      rows.push({name: 'iterations', items: m.iters.map((it, k) => ({b: it[1], e: it[2], text: `iteration ${it[0]}`,
        color: k % 2 ? '#d8d8e8' : '#e8e8f2', what: 'iteration'}))});
    if (m.phases && m.phases.length)
      rows.push({name: 'phases', items: m.phases.map(p => {
        const name = R.strings[p[0]];
        const base = name.replace(/\[.*$/, '');
        return {b: p[3], e: p[4], text: name + (p[1] ? ` mb ${p[1]}` : ''),
          color: PHASE_COLOR[base] || PALETTE[hashStr(base) % PALETTE.length], what: 'phase'};
      })});
    if (m.refused && m.refused.length) /* requests refused for want of memory: moments */
      rows.push({name: 'refused', items: m.refused.map(x => ({b: x[0], e: x[0], text: x[2], color: '#c62828',
        what: 'refused', point: true}))});
    if (m.modules && m.modules.length) {
      const depth = Math.min(3, 1 + m.modules.reduce((d, x) => Math.max(d, x[1]), 0));
      for (let d = 0; d < depth; d++)
        rows.push({name: `modules ${d + 1}`, items: m.modules.filter(x => x[1] === d || (d === 2 && x[1] > 2)).map(x => {
          const name = R.strings[x[0]];
          const rgb = shade(hexColor(PALETTE[hashStr(name) % PALETTE.length]), 0.45);
          return {b: x[2], e: x[3], text: name, color: `rgb(${rgb.join(',')})`, what: 'module'};
        })});
    }
    return rows;
  }

  function drawBands(P) {
    const R = P.R, c = P.bands, dpr = P.dpr;
    const rows = P.rows;
    c.width = Math.round(c.clientWidth * dpr);
    c.height = Math.round(rows.length * BAND_H * dpr);
    const ctx = c.getContext('2d');
    ctx.scale(dpr, dpr);
    ctx.font = '10px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    rows.forEach((row, r) => {
      const y = r * BAND_H;
      ctx.fillStyle = '#666';
      ctx.fillText(row.name, 2, y + BAND_H / 2);
      ctx.save();
      ctx.beginPath();
      ctx.rect(LEFT, y, P.cssW, BAND_H);
      ctx.clip();
      for (const it of row.items) {
        const x0 = LEFT + unitToX(R, timeToUnit(R, it.b), P.cssW);
        const x1 = LEFT + unitToX(R, timeToUnit(R, it.e), P.cssW);
        if (x1 < LEFT || x0 > LEFT + P.cssW) continue;
        ctx.fillStyle = it.color;
        if (it.point) { /* a moment: a mark, hit within POINT_HIT px */
          ctx.fillRect(x0 - 1.5, y + 1, 3, BAND_H - 2);
          continue;
        }
        ctx.fillRect(x0, y + 1, Math.max(1, x1 - x0 - 0.5), BAND_H - 2);
        if (x1 - x0 > 40) {
          ctx.fillStyle = '#222';
          const tx = Math.max(x0, LEFT) + 3;
          ctx.fillText(it.text, tx, y + BAND_H / 2, Math.min(x1, LEFT + P.cssW) - tx - 2);
        }
      }
      ctx.restore();
    });
  }

  /* Where object i is drawn in each column: [bottom, top] bytes, NaN where
   * it is not live; its offset only falls (objects below it are freed) as
   * no object below it can be allocated after it. */
  function outline(P, i) {
    const R = P.R, ev = P.ev, W = P.W;
    const lo = new Float64Array(W).fill(NaN);
    const a = R.oa[i], f = R.of[i];
    let off = 0;
    for (let j = 0; j < i; j++) if (R.of[j] > a) off += R.size[j];
    let cur = a;
    for (let c = 0; c < W; c++) {
      const t = ev[c];
      if (t < a || t >= f) continue;
      while (cur < t) {
        cur++;
        const o = R.evo[cur];
        if (o < 0 && ~o < i) off -= R.size[~o];
      }
      lo[c] = off + (R.res ? R.res[t] : 0);
    }
    return lo;
  }

  function drawOutline(P, ctx, i, style, width) {
    const R = P.R, k = P.k, H = P.H;
    const lo = outline(P, i);
    const x0 = Math.round(LEFT * P.dpr);
    const y = b => H - (b - P.ylo) * k;
    ctx.strokeStyle = style;
    ctx.lineWidth = width * P.dpr;
    ctx.fillStyle = style === '#000' ? 'rgba(0,0,0,0.12)' : 'rgba(225,87,89,0.25)';
    let c = 0;
    while (c < P.W) {
      while (c < P.W && isNaN(lo[c])) c++;
      if (c >= P.W) break;
      const start = c;
      while (c < P.W && !isNaN(lo[c])) c++;
      ctx.beginPath();
      for (let q = start; q < c; q++) {
        ctx.lineTo(x0 + q, y(lo[q] + R.size[i]));
        ctx.lineTo(x0 + q + 1, y(lo[q] + R.size[i]));
      }
      for (let q = c - 1; q >= start; q--) {
        ctx.lineTo(x0 + q + 1, y(lo[q]));
        ctx.lineTo(x0 + q, y(lo[q]));
      }
      ctx.closePath();
      ctx.fill();
      ctx.stroke();
    }
  }

  function drawOverlay(P) {
    const ctx = P.over.getContext('2d');
    ctx.clearRect(0, 0, P.over.width, P.over.height);
    const r = P.R.index;
    if (V.pin && V.pin.r === r) drawOutline(P, ctx, V.pin.i, '#d62728', 2);
    if (V.hover && V.hover.r === r && !(V.pin && V.pin.r === r && V.pin.i === V.hover.i))
      drawOutline(P, ctx, V.hover.i, '#000', 1);
    /* the allocator-state cursor */
    if (V.cursor.e >= 0 && (V.cursor.r === r || V.xmode === 'time')) {
      const CR = V.ranks[V.cursor.r];
      const u = V.cursor.r === r ? eventToUnit(P.R, V.cursor.e) : timeToUnit(P.R, CR.time(V.cursor.e));
      const x = Math.round((LEFT + unitToX(P.R, u, P.cssW)) * P.dpr);
      if (x >= LEFT * P.dpr) {
        ctx.fillStyle = V.cursor.r === r ? '#d62728' : 'rgba(214,39,40,0.4)';
        for (let yy = 0; yy < P.H; yy += 6 * P.dpr) ctx.fillRect(x, yy, Math.max(1, P.dpr), 3 * P.dpr);
      }
    }
    if (P.brush) {
      const a = Math.min(P.brush[0], P.brush[1]), b = Math.max(P.brush[0], P.brush[1]);
      ctx.fillStyle = 'rgba(78,121,167,0.18)';
      ctx.fillRect((LEFT + a) * P.dpr, 0, (b - a) * P.dpr, P.H);
    }
  }

  /* The object under (x, y) CSS px in the plot: exact at the pointer,
   * preferring the largest one within 3 px; {resid} over the grey band. */
  function hitTest(P, x, y) {
    const R = P.R;
    const c = Math.floor(x * P.dpr);
    if (c < 0 || c >= P.W) return null;
    const e = P.ev[c];
    if (e < 0) return null;
    const bytes = P.ylo + (P.H - y * P.dpr) / P.k;
    const base = R.res ? R.res[e] : 0;
    if (bytes < base) return {resid: true, e, bytes: base};
    const want = bytes - base, tol = 3 * P.dpr / P.k;
    const n = R.allocated(e);
    let off = 0, best = -1, exact = -1;
    for (let i = 0; i < n; i++) {
      if (R.of[i] <= e) continue;
      const s = R.size[i];
      if (off > want + tol) break;
      if (off + s >= want - tol) {
        if (best < 0 || s > R.size[best]) best = i;
        if (off <= want && want < off + s) exact = i;
      }
      off += s;
    }
    if (best < 0) return null;
    if (exact >= 0 && R.size[exact] * P.k >= 3 * P.dpr) best = exact;
    return {i: best, e};
  }

  /* ------------------------------------------------------------ details */

  function objectSummary(R, i) {
    const t0 = R.time(R.oa[i]);
    const t1 = R.of[i] < R.ne ? R.time(R.of[i]) : null;
    const cls = V.meta.classes[R.cls[i] & 15] || '?';
    return {
      size: R.size[i], requested: R.req[i], cls,
      patterns: V.meta.patterns.filter((p, k) => (R.cls[i] >> 4) & (1 << k)),
      line: R.userLine(i), module: R.moduleName(i),
      t0, t1, life: t1 === null ? null : t1 - t0,
      phase: R.phaseText(t0), phaseFree: t1 === null ? null : R.phaseText(t1),
      addr: R.addr ? R.addr[i] : null, frames: R.frames(i),
    };
  }

  function tooltipHtml(R, i) {
    const s = objectSummary(R, i);
    return `<b>${fmtBytes(s.size)}</b> ${esc(s.cls)}${s.patterns.length ? ' · <span class=stpv-bad>' +
      esc(s.patterns.join(', ')) + '</span>' : ''}<br><span class=stpv-line>${esc(s.line)}</span><br>` +
      `${s.module ? 'module ' + esc(s.module) + '<br>' : ''}${esc(s.phase)}<br>` +
      `lifetime ${s.life === null ? 'to the end (never freed)' : fmtNs(s.life)}`;
  }

  function detailHtml(R, i, pinned) {
    const s = objectSummary(R, i);
    const rows = [];
    const row = (k, v) => rows.push(`<tr><th>${k}</th><td>${v}</td></tr>`);
    row('size', `<b>${fmtBytes(s.size)}</b> (${fmtCount(s.size)} B${s.requested !== s.size ?
      `; requested ${fmtCount(s.requested)} B` : ''})`);
    row('class', esc(s.cls));
    row('user line', `<span class=stpv-line>${esc(s.line)}</span>`);
    row('module', s.module ? esc(s.module) : '(none)');
    row('allocated', `${fmtNs(s.t0)} · ${esc(s.phase)}`);
    row('freed', s.t1 === null ? 'never (live at the end)' : `${fmtNs(s.t1)} · ${esc(s.phaseFree)}`);
    row('lifetime', s.life === null ? 'to the end' : `${fmtNs(s.life)} (${fmtCount(R.of[i] - R.oa[i])} events)`);
    if (s.addr !== null) row('address', '0x' + s.addr.toString(16));
    if (s.patterns.length) row('patterns', `<span class=stpv-bad>${esc(s.patterns.join(', '))}</span>`);
    if (V.ranks.length > 1) row('rank', esc(R.m.label));
    let h = `<div class=stpv-h>${pinned ? 'Pinned object' : 'Object under the pointer'} #${i}` +
      `${pinned ? ' <button class=stpv-unpin>unpin</button>' : ' <span class=stpv-hint>(click to pin)</span>'}</div>` +
      `<table class=stpv-kv>${rows.join('')}</table>`;
    h += `<div class=stpv-h2>call path (innermost first)</div><div class=stpv-path>${s.frames.length ?
      s.frames.map(esc).join('<br>&larr; ') : '(none recorded)'}</div>`;
    if (pinned) {
      h += findingsOf(R, i);
      h += accessesOf(R, i);
    }
    return h;
  }

  function findingsOf(R, i) {
    const site = R.site(i);
    const pats = R.cls[i] >> 4;
    const list = (R.m.findings || []).map((f, k) => [f, k]).filter(([f]) => f.site === site && (pats & (1 << f.pat)));
    if (!list.length) return '<div class=stpv-h2>findings</div><p class=stpv-hint>none names this object</p>';
    return '<div class=stpv-h2>findings</div>' + list.map(([f, k]) =>
      `<p><a href="#" data-stpv-finding="${R.index}:${k}">${esc(V.meta.pattern_titles[f.pat])}</a>: ` +
      `${fmtCount(f.objects)} objects, ${fmtBytes(f.bytes)}${f.obj === i ? ' (this is the worst instance)' : ''}` +
      `<br><span class=stpv-sug>${esc(f.sug)}</span></p>`).join('');
  }

  function accessesOf(R, i) {
    if (!R.xn) return '<div class=stpv-h2>accesses</div><p class=stpv-hint>the trace has no API events with address ' +
      'ranges (record a GPU run, or --accesses=exact)</p>';
    const a = R.xs[i], b = R.xs[i + 1];
    const total = R.xc ? R.xc[i] : b - a;
    if (a === b) return '<div class=stpv-h2>accesses</div><p>none: no API touched it</p>';
    const kinds = ['api', 'kernel', 'memcpy', 'memset', 'sync', 'op'];
    let h = `<div class=stpv-h2>accesses (${fmtCount(b - a)} listed)</div><table class=stpv-acc>`;
    for (let k = a; k < b; k++) {
      const m = R.xm[k];
      const mode = (m & 1 ? 'R' : '') + (m & 2 ? 'W' : '');
      h += `<tr><td>${fmtNs(R.xt[k])}</td><td>${kinds[m >> 2] || 'api'}</td><td>${mode || '-'}</td>` +
        `<td>${esc(R.strings[R.xa[k]] || '')}</td></tr>`;
    }
    return h + `</table>${total > b - a ? `<p class=stpv-hint>the first ${fmtCount(b - a)} are listed</p>` : ''}`;
  }

  function showDetail() {
    const pane = V.el.detail;
    const o = V.pin || V.hover;
    if (!o) {
      pane.innerHTML = '<p class=stpv-hint>Hover over an allocation to see it; click to pin it, ' +
        'with its accesses and findings. Wheel: zoom; drag: pan; shift-drag: zoom to a range; ' +
        'double-click: whole run; Esc: unpin.</p>';
      return;
    }
    pane.innerHTML = detailHtml(V.ranks[o.r], o.i, !!V.pin);
  }

  /* ------------------------------------------------------------ lists */

  function findingsTab() {
    let h = '';
    V.ranks.forEach(R => {
      const list = R.m.findings || [];
      if (V.ranks.length > 1) h += `<div class=stpv-h2>${esc(R.m.label)}</div>`;
      if (!list.length) {
        h += '<p class=stpv-hint>no findings</p>';
        return;
      }
      h += '<table class=stpv-list><tr><th>pattern</th><th>where</th><th>bytes</th><th>waste</th></tr>';
      list.forEach((f, k) => {
        h += `<tr data-stpv-finding="${R.index}:${k}"><td>${esc(V.meta.pattern_titles[f.pat])}</td>` +
          `<td class=stpv-line>${esc(R.siteLine(f.site))}</td>` +
          `<td>${fmtBytes(f.bytes)}</td><td>${esc(f.waste)}</td></tr>`;
      });
      h += '</table>';
    });
    return h;
  }

  function sitesTab() {
    let h = '';
    V.ranks.forEach(R => {
      if (V.ranks.length > 1) h += `<div class=stpv-h2>${esc(R.m.label)}</div>`;
      h += '<table class=stpv-list><tr><th>#</th><th>user line</th><th>live at peak</th><th>allocs</th></tr>';
      (R.m.top || []).forEach((s, k) => {
        h += `<tr data-stpv-site="${R.index}:${s}"><td>${k + 1}</td><td class=stpv-line>` +
          `${esc(R.siteLine(s))}</td><td>${fmtBytes(R.sp[s])}</td><td>${fmtCount(R.sn[s])}</td></tr>`;
      });
      h += '</table>';
    });
    return h;
  }

  function setTab(name) {
    V.tab = name;
    for (const b of V.el.tabs.querySelectorAll('button')) b.classList.toggle('stpv-on', b.dataset.tab === name);
    if (name === 'object') showDetail();
    else V.el.detail.innerHTML = name === 'findings' ? findingsTab() : sitesTab();
  }

  function highlightSite(r, site, pat, label) {
    const R = V.ranks[r];
    V.hl = {r, label, test: i => R.site(i) === site && (pat < 0 || ((R.cls[i] >> 4) & (1 << pat)))};
    highlightFlags();
    V.el.hl.innerHTML = `highlighted: ${esc(label)} <button class=stpv-clear>clear</button>`;
    renderAll();
  }

  function selectFinding(r, k) {
    const R = V.ranks[r];
    const f = R.m.findings[k];
    highlightSite(r, f.site, f.pat, `${V.meta.pattern_titles[f.pat]} at ${R.siteLine(f.site)}`);
    if (f.obj >= 0) {
      pinObject(r, f.obj, true);
    }
  }

  function selectSite(r, s) {
    const R = V.ranks[r];
    highlightSite(r, s, -1, `call site ${R.siteLine(s)}`);
  }

  /* ------------------------------------------------------------ actions */

  function renderAll() {
    V.sharedMax = 0;
    for (const P of V.panels) renderRank(P);
    drawMinimap();
    drawSegments();
    V.el.range.textContent = rangeText();
  }

  function overlays() {
    for (const P of V.panels) drawOverlay(P);
    drawMinimap();
  }

  function rangeText() {
    const R = V.ranks[0];
    if (V.xmode === 'time') return `showing ${fmtNs(V.f0 * V.tmax)} – ${fmtNs(V.f1 * V.tmax)}`;
    return `showing events ${fmtCount(V.f0 * R.ne)} – ${fmtCount(V.f1 * R.ne)}`;
  }

  function setView(f0, f1) {
    const minSpan = 1e-9;
    if (f1 - f0 < minSpan) {
      const m = (f0 + f1) / 2;
      f0 = m - minSpan / 2;
      f1 = m + minSpan / 2;
    }
    if (f1 - f0 > 1) {
      f0 = 0;
      f1 = 1;
    }
    if (f0 < 0) {
      f1 -= f0;
      f0 = 0;
    }
    if (f1 > 1) {
      f0 -= f1 - 1;
      f1 = 1;
    }
    V.f0 = Math.max(0, f0);
    V.f1 = Math.min(1, f1);
    /* one render a frame however many wheel or drag events came */
    if (!V.pending) {
      V.pending = true;
      requestAnimationFrame(() => {
        V.pending = false;
        renderAll();
      });
    }
  }

  function zoomAt(frac, factor) {
    const c = V.f0 + (V.f1 - V.f0) * frac;
    setView(c - (c - V.f0) * factor, c + (V.f1 - c) * factor);
  }

  function pinObject(r, i, zoom) {
    V.pin = {r, i};
    const R = V.ranks[r];
    if (zoom) {
      const a = eventToUnit(R, R.oa[i]), b = eventToUnit(R, R.of[i] < R.ne ? R.of[i] : R.ne - 1);
      const d = domain(R), pad = Math.max((b - a) * 0.3, d * 1e-6);
      V.f0 = Math.max(0, (a - pad) / d);
      V.f1 = Math.min(1, (b + pad) / d);
      setCursor(r, R.oa[i]);
    }
    setTab('object');
    renderAll();
  }

  function setCursor(r, e) {
    const R = V.ranks[r];
    V.cursor = {r, e: Math.max(-1, Math.min(R.ne - 1, e))};
    if (V.el.rankSel) V.el.rankSel.value = r;
    V.el.slider.max = Math.max(0, R.ne - 1);
    V.el.slider.value = Math.max(0, V.cursor.e);
  }

  /* ------------------------------------------------------------ minimap */

  function drawMinimap() {
    const c = V.el.mini, dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth, h = 40;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    const ctx = c.getContext('2d');
    ctx.scale(dpr, dpr);
    const pw = w - LEFT;
    ctx.fillStyle = '#666';
    ctx.font = '10px system-ui, sans-serif';
    ctx.fillText('whole run', 2, 12);
    const mx = Math.max(...V.ranks.map(R => R.max), 1);
    V.ranks.forEach((R, r) => {
      const key = `${V.xmode}:${Math.round(pw)}`;
      if (R.miniKey !== key) {
        const cm = new Float64Array(Math.max(1, Math.round(pw)));
        for (let e = 0; e < R.ne; e++) {
          const u = V.xmode === 'time' ? R.et[e] / V.tmax : (e + 0.5) / R.ne;
          const x = Math.min(cm.length - 1, Math.floor(u * cm.length));
          if (R.tot[e] > cm[x]) cm[x] = R.tot[e];
        }
        R.miniKey = key;
        R.mini = cm;
      }
      const col = R.mini;
      ctx.fillStyle = r === 0 ? 'rgba(78,121,167,0.7)' : `rgba(${hexColor(PALETTE[r % PALETTE.length]).join(',')},0.5)`;
      let last = 0;
      for (let x = 0; x < col.length; x++) {
        if (col[x] > 0) last = col[x];
        else if (V.xmode !== 'time') last = col[x];
        const v = col[x] || last;
        ctx.fillRect(LEFT + x, h - v / mx * (h - 4), 1, v / mx * (h - 4));
        if (col[x] === 0 && V.xmode === 'time' && x > 0) last = v;
      }
    });
    ctx.strokeStyle = '#d62728';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(LEFT + V.f0 * pw, 1, Math.max(2, (V.f1 - V.f0) * pw), h - 2);
  }

  /* ------------------------------------------------------------ allocator state */

  function segState(R, S, e) {
    /* mapped ranges at e: [addr, end, id] sorted by address */
    let ranges = [];
    const n = S.ev ? upperBound(S.ev, e) : 0;
    for (let k = 0; k < n; k++) {
      const a = S.at[k], z = S.sz[k], id = S.id ? S.id[k] : -1 - k;
      if (z > 0) {
        ranges.push([a, a + z, id]);
        continue;
      }
      const b = a - z;
      const next = [];
      for (const r of ranges) {
        if (r[1] <= a || r[0] >= b) {
          next.push(r);
          continue;
        }
        if (r[0] < a) next.push([r[0], a, r[2]]);
        if (r[1] > b) next.push([b, r[1], r[2]]);
      }
      ranges = next;
    }
    ranges.sort((x, y) => x[0] - y[0]);
    /* expandable segments map page after page: join a segment's adjacent pages */
    const segs = [];
    for (const r of ranges) {
      const last = segs[segs.length - 1];
      if (last && last.id === r[2] && r[2] >= 0 && last.end === r[0]) last.end = r[1];
      else segs.push({addr: r[0], end: r[1], id: r[2], blocks: []});
    }
    /* blocks: live objects with an address in this state */
    const starts = segs.map(s => s.addr);
    let outside = 0, notShown = 0;
    const nalloc = R.allocated(e);
    for (let i = 0; i < nalloc; i++) {
      if (R.of[i] <= e) continue;
      const a = S.addr ? S.addr[i] : -1;
      if (!(a >= 0)) {
        notShown++;
        continue;
      }
      const k = upperBound(starts, a) - 1;
      if (k < 0 || a >= segs[k].end) {
        outside++;
        continue;
      }
      segs[k].blocks.push(i);
    }
    let reserved = 0, allocated = 0, free = 0, holes = 0, largest = 0, nblocks = 0;
    for (const s of segs) {
      s.blocks.sort((x, y) => S.addr[x] - S.addr[y]);
      s.holes = [];
      let at = s.addr;
      for (const i of s.blocks) {
        const a = S.addr[i], bsz = R.size[i] + (S.extra ? S.extra[i] : 0);
        if (a > at) s.holes.push([at, a - at]);
        at = Math.max(at, a + bsz);
        allocated += bsz;
        nblocks++;
      }
      if (s.end > at) s.holes.push([at, s.end - at]);
      reserved += s.end - s.addr;
      for (const h of s.holes) {
        free += h[1];
        holes++;
        if (h[1] > largest) largest = h[1];
      }
    }
    return {segs, reserved, allocated, free, holes, largest, nblocks, outside, notShown};
  }

  function drawSegments() {
    const el = V.el;
    if (!V.segKey) return;
    const R = V.ranks[V.cursor.r];
    const S = R.segs.find(s => s.key === V.segKey) || R.segs[0];
    const c = el.segCanvas, dpr = window.devicePixelRatio || 1;
    const e = V.cursor.e;
    const key = `${V.cursor.r}:${S.key}:${e}`;
    if (V.segKeyLast !== key) {
      V.segCache = segState(R, S, e);
      V.segKeyLast = key;
    }
    const st = V.segCache;
    V.segLast = st;
    const w = c.clientWidth;
    const sorted = st.segs.slice().sort((a, b) => (b.end - b.addr) - (a.end - a.addr) || a.addr - b.addr);
    const rowBytes = sorted.length ? sorted[0].end - sorted[0].addr : 1;
    const ROW = 20, GAP = 4;
    /* lay out: rows of rowBytes, segments left to right */
    let row = 0, used = 0;
    for (const s of sorted) {
      const sz = s.end - s.addr;
      if (used > 0 && used + sz > rowBytes * 1.0001) {
        row++;
        used = 0;
      }
      s.row = row;
      s.x = used / rowBytes * (w - 8) + 4;
      s.w = Math.max(1, sz / rowBytes * (w - 8) - 1);
      used += sz;
    }
    const rows = sorted.length ? row + 1 : 0;
    const hcss = Math.max(40, Math.min(600, rows * (ROW + GAP) + 8));
    c.style.height = hcss + 'px';
    c.width = Math.round(w * dpr);
    c.height = Math.round(hcss * dpr);
    const ctx = c.getContext('2d');
    ctx.scale(dpr, dpr);
    ctx.clearRect(0, 0, w, hcss);
    /* blocks under a pixel wide are drawn per pixel: the largest one's colour */
    const rects = [];
    for (const s of sorted) {
      const y = 4 + s.row * (ROW + GAP);
      if (y > hcss) break;
      const sz = s.end - s.addr;
      const X = a => s.x + (a - s.addr) / sz * s.w;
      ctx.fillStyle = '#fff';
      ctx.fillRect(s.x, y, s.w, ROW);
      let pix = -1, pixBest = -1;
      const flush = () => {
        if (pixBest < 0) return;
        ctx.fillStyle = css32(colorOf(R, pixBest));
        ctx.fillRect(pix, y, 1, ROW);
        rects.push({x0: pix, x1: pix + 1, y, i: pixBest});
        pixBest = -1;
      };
      for (const i of s.blocks) {
        const a = S.addr[i], bsz = R.size[i] + (S.extra ? S.extra[i] : 0);
        const x0 = X(a), x1 = X(a + bsz), xr = X(a + R.req[i]);
        if (x1 - x0 < 1) {
          const px = Math.floor(x0);
          if (px !== pix) {
            flush();
            pix = px;
          }
          if (pixBest < 0 || R.size[i] > R.size[pixBest]) pixBest = i;
          continue;
        }
        flush();
        ctx.fillStyle = css32(colorOf(R, i));
        ctx.fillRect(x0, y, Math.max(0.5, xr - x0), ROW);
        if (x1 - xr > 0.3) {
          ctx.fillStyle = 'rgba(214,39,40,0.55)';
          ctx.fillRect(xr, y, x1 - xr, ROW);
        }
        rects.push({x0, x1, y, i});
      }
      flush();
      for (const hl of s.holes) if (X(hl[0] + hl[1]) - X(hl[0]) >= 0.5) rects.push({x0: X(hl[0]), x1: X(hl[0] + hl[1]), y, hole: hl, seg: s});
      ctx.strokeStyle = '#555';
      ctx.lineWidth = 1;
      ctx.strokeRect(s.x + 0.5, y + 0.5, s.w - 1, ROW - 1);
    }
    if (V.pin && V.pin.r === V.cursor.r) {
      const r = rects.find(q => q.i === V.pin.i);
      if (r) {
        ctx.strokeStyle = '#d62728';
        ctx.lineWidth = 2;
        ctx.strokeRect(r.x0, r.y - 1, Math.max(2, r.x1 - r.x0), ROW + 2);
      }
    }
    V.segRects = rects;
    const t = e >= 0 ? R.time(e) : 0;
    const frag = st.reserved ? 1 - st.allocated / st.reserved : 0;
    el.segText.innerHTML = `${esc(S.name)} at <b>${fmtNs(t)}</b> (event ${fmtCount(e)}${e === R.peakEv ?
      ', the peak' : ''}; ${esc(R.phaseText(t))}): reserved <b>${fmtBytes(st.reserved)}</b> in ` +
      `${plural(st.segs.length, 'segment')}; <b class=stpv-blocks>${plural(st.nblocks, 'block')}</b>, ` +
      `${fmtBytes(st.allocated)}; free ${fmtBytes(st.free)} in ${plural(st.holes, 'hole')}, largest ` +
      `${fmtBytes(st.largest)}; fragmentation ${(100 * frag).toFixed(1)}%` +
      (st.notShown ? `; ${fmtCount(st.notShown)} live objects without an address here` : '') +
      (st.outside ? `; ${fmtCount(st.outside)} blocks outside every segment` : '') +
      (S.note ? `<br><span class=stpv-hint>${esc(S.note)}</span>` : '');
  }

  /* ------------------------------------------------------------ DOM */

  const CSS = `
.stpv{position:relative;left:50%;transform:translateX(-50%);width:min(1800px,calc(100vw - 24px));
 font:13px/1.35 system-ui,-apple-system,'Segoe UI',sans-serif;margin:8px 0 24px}
.stpv-bar{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin:4px 0 6px}
.stpv-bar label{white-space:nowrap}.stpv button{font:12px system-ui,sans-serif;padding:1px 7px}
.stpv-main{display:grid;grid-template-columns:minmax(0,1fr) 380px;gap:10px}
.stpv-panel{position:relative;margin-bottom:6px}.stpv-panel canvas{display:block;width:100%}
.stpv-over{position:absolute;left:0;cursor:crosshair}
.stpv-label{font-weight:600;margin:2px 0}.stpv-side{border-left:1px solid #ddd;padding-left:10px;
 max-height:720px;overflow:auto}.stpv-tabs button.stpv-on{background:#4e79a7;color:#fff}
.stpv-kv th{width:80px;text-align:left;font-weight:600;padding:1px 6px 1px 0;background:none;border:0}
.stpv-kv td{padding:1px 0;border:0}.stpv-h{font-weight:600;margin:6px 0 4px}.stpv-h2{font-weight:600;margin:8px 0 2px}
.stpv-path{font:11px ui-monospace,monospace;color:#444;word-break:break-all}
.stpv-line{font:12px ui-monospace,monospace}.stpv-bad{color:#b22}.stpv-hint{color:#777}.stpv-sug{color:#245}
.stpv-list{font-size:12px}.stpv-list tr[data-stpv-finding],.stpv-list tr[data-stpv-site]{cursor:pointer}
.stpv-list tr:hover td{background:#eef3fa}.stpv-acc{font-size:11px}
.stpv-tip{position:fixed;pointer-events:none;background:#fffffe;border:1px solid #999;padding:4px 6px;
 font-size:12px;max-width:420px;box-shadow:0 1px 4px rgba(0,0,0,.2);z-index:10;display:none}
.stpv-mini{display:block;width:100%}.stpv-seg{margin-top:8px;border-top:1px solid #ddd;padding-top:6px}.stpv-seg canvas{display:block;width:100%}
.stpv-legend span{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;vertical-align:middle}
.stpv-err{background:#f8d7da;border:1px solid #d08080;padding:8px}
tr[data-stp-finding],tr[data-stp-site]{cursor:pointer}`;

  function h(tag, attrs, html) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (html !== undefined) e.innerHTML = html;
    return e;
  }

  function buildDom(root) {
    const meta = V.meta;
    root.innerHTML = '';
    const style = h('style', {}, CSS);
    document.head.appendChild(style);
    const bar = h('div', {class: 'stpv-bar'});
    bar.innerHTML = `<label>x <select class=stpv-x><option value=time>time</option>` +
      `<option value=events>allocation events</option></select></label>` +
      `<label>colour <select class=stpv-color><option value=class>class</option>` +
      `<option value=site>call site</option><option value=module>module</option></select></label>` +
      (V.ranks.length > 1 ? '<label><input type=checkbox class=stpv-shared> same y axis</label>' : '') +
      `<button class=stpv-fit>fit y</button><button class=stpv-reset>whole run</button>` +
      `<button class=stpv-peak>peak</button><span class=stpv-range></span><span class=stpv-hl></span>`;
    root.appendChild(bar);
    const legend = h('div', {class: 'stpv-legend'});
    legend.innerHTML = meta.classes.map((c, k) => `<span style="background:${CLASS_COLOR[k]}"></span>${esc(c)}`)
      .join('') + (V.ranks.some(R => R.m.objects_total > R.n) ? `<span style="background:#d0d0d0"></span>the ` +
      `smaller objects, not drawn one by one (${esc(V.ranks.map(R => fmtCount(R.m.objects_total - R.n)).join(', '))})` :
      '');
    root.appendChild(legend);
    const main = h('div', {class: 'stpv-main'});
    const left = h('div');
    const side = h('div', {class: 'stpv-side'});
    main.appendChild(left);
    main.appendChild(side);
    root.appendChild(main);
    const each = V.ranks.length > 1 ? Math.max(120, Math.round(MAIN_H * 1.4 / V.ranks.length)) : MAIN_H;
    V.panels = V.ranks.map(R => {
      const P = {R, h: each, rows: bandRows(R)};
      const wrap = h('div', {class: 'stpv-panel', 'data-rank': R.index});
      const label = h('div', {class: 'stpv-label'}, `${esc(R.m.label)} · ${esc(R.m.space)} · peak ` +
        `${fmtBytes(R.m.peak.bytes)} at ${fmtNs(R.m.peak.ns)} · ${fmtCount(R.n)} of ${fmtCount(R.m.objects_total)} ` +
        `objects embedded`);
      P.bands = h('canvas', {class: 'stpv-bands'});
      P.bands.style.height = `${P.rows.length * BAND_H}px`;
      P.main = h('canvas', {class: 'stpv-canvas'});
      P.main.style.height = `${each}px`;
      P.over = h('canvas', {class: 'stpv-over'});
      P.over.style.height = `${each}px`;
      P.over.style.top = `${P.rows.length * BAND_H + label.offsetHeight}px`;
      P.axis = h('canvas', {class: 'stpv-axis'});
      P.axis.style.height = `${AXIS_H}px`;
      wrap.appendChild(label);
      wrap.appendChild(P.bands);
      const holder = h('div', {style: 'position:relative'});
      holder.appendChild(P.main);
      P.over.style.top = '0px';
      holder.appendChild(P.over);
      wrap.appendChild(holder);
      wrap.appendChild(P.axis);
      left.appendChild(wrap);
      return P;
    });
    V.el = {bar, side};
    V.el.mini = h('canvas', {class: 'stpv-mini'});
    V.el.mini.style.height = '40px';
    left.appendChild(V.el.mini);
    V.el.tabs = h('div', {class: 'stpv-tabs'}, '<button data-tab=object>object</button> ' +
      '<button data-tab=findings>findings</button> <button data-tab=sites>top call sites</button>');
    V.el.detail = h('div', {class: 'stpv-detail'});
    side.appendChild(V.el.tabs);
    side.appendChild(V.el.detail);
    V.el.range = bar.querySelector('.stpv-range');
    V.el.hl = bar.querySelector('.stpv-hl');
    V.el.tip = h('div', {class: 'stpv-tip'});
    document.body.appendChild(V.el.tip);
    /* allocator state */
    const seg = h('div', {class: 'stpv-seg'});
    const anySeg = V.ranks.some(R => R.segs.length);
    if (anySeg) {
      const opts = [];
      for (const S of V.ranks[V.cursor.r].segs) opts.push(`<option value="${esc(S.key)}">${esc(S.name)}</option>`);
      seg.innerHTML = `<div class=stpv-bar><b>Allocator state at the cursor</b><label>of ` +
        `<select class=stpv-segsrc>${opts.join('')}</select></label>` +
        (V.ranks.length > 1 ? `<label>rank <select class=stpv-rank>${V.ranks.map((R, r) =>
          `<option value=${r}>${esc(R.m.label)}</option>`).join('')}</select></label>` : '') +
        `<button class=stpv-prev>&lt;</button><input type=range class=stpv-slider min=0 step=1 ` +
        `style="flex:1;min-width:200px"><button class=stpv-next>&gt;</button>` +
        `<button class=stpv-segpeak>peak</button></div><div class=stpv-segtext></div><canvas class=stpv-segc></canvas>` +
        `<div class=stpv-hint>blocks in the colours of the timeline, free holes white, rounding (size above ` +
        `the request) red; hover a block for its object, click to pin it; the slider and a click on the ` +
        `timeline move the cursor</div>`;
      V.segKey = V.ranks[V.cursor.r].segs.length ? V.ranks[V.cursor.r].segs[0].key : null;
    } else {
      seg.innerHTML = '<div class=stpv-hint>No allocator state: the space has no recorded segments and the ' +
        'models were not run.</div><input type=range class=stpv-slider style="display:none">';
    }
    root.appendChild(seg);
    V.el.segCanvas = seg.querySelector('.stpv-segc');
    V.el.segText = seg.querySelector('.stpv-segtext');
    V.el.slider = seg.querySelector('.stpv-slider');
    V.el.rankSel = seg.querySelector('.stpv-rank');
    V.el.seg = seg;
  }

  function showTip(ev, html) {
    const t = V.el.tip;
    if (!html) {
      t.style.display = 'none';
      return;
    }
    t.innerHTML = html;
    t.style.display = 'block';
    const x = ev.clientX + 14, y = ev.clientY + 14;
    t.style.left = `${Math.min(x, window.innerWidth - t.offsetWidth - 8)}px`;
    t.style.top = `${Math.min(y, window.innerHeight - t.offsetHeight - 8)}px`;
  }

  function bandAt(P, x, y) {
    const row = P.rows[Math.floor(y / BAND_H)];
    if (!row) return null;
    const u = xToUnit(P.R, x - LEFT, P.cssW);
    for (const it of row.items) {
      const a = timeToUnit(P.R, it.b), b = timeToUnit(P.R, it.e);
      if (it.point ? Math.abs(LEFT + unitToX(P.R, a, P.cssW) - x) <= POINT_HIT : a <= u && u < b) return it;
    }
    return null;
  }

  function wire() {
    const el = V.el;
    let raf = 0;
    const later = fn => {
      cancelAnimationFrame(raf);
      raf = requestAnimationFrame(fn);
    };
    V.panels.forEach(P => {
      let drag = null;
      const pos = ev => {
        const r = P.over.getBoundingClientRect();
        return [ev.clientX - r.left - LEFT, ev.clientY - r.top];
      };
      P.over.addEventListener('mousemove', ev => {
        const [x, y] = pos(ev);
        if (drag) {
          if (drag.brush) {
            P.brush = [drag.x, Math.max(0, Math.min(P.cssW, x))];
            drawOverlay(P);
          } else {
            const d = (x - drag.x) / P.cssW * (drag.f1 - drag.f0);
            V.f0 = drag.f0 - d;
            V.f1 = drag.f1 - d;
            later(() => setView(V.f0, V.f1));
            drag.moved = drag.moved || Math.abs(x - drag.x) > 3;
          }
          return;
        }
        later(() => {
          if (x < 0) {
            showTip(ev, null);
            return;
          }
          const hit = hitTest(P, x, y);
          const old = V.hover;
          V.hover = hit && hit.i !== undefined ? {r: P.R.index, i: hit.i} : null;
          if (hit && hit.resid)
            showTip(ev, `${fmtBytes(hit.bytes)} in objects not embedded one by one (the smallest by bytes x ` +
              `lifetime: --viewer-objects)`);
          else showTip(ev, V.hover ? tooltipHtml(P.R, hit.i) : null);
          if (!old !== !V.hover || (old && V.hover && (old.i !== V.hover.i || old.r !== V.hover.r))) {
            overlays();
            if (!V.pin && V.tab === 'object') showDetail();
          }
        });
      });
      P.over.addEventListener('mouseleave', () => {
        showTip(null, null);
        if (V.hover) {
          V.hover = null;
          overlays();
          if (!V.pin && V.tab === 'object') showDetail();
        }
      });
      P.over.addEventListener('mousedown', ev => {
        const [x] = pos(ev);
        drag = {x, f0: V.f0, f1: V.f1, brush: ev.shiftKey, moved: false};
        ev.preventDefault();
      });
      window.addEventListener('mouseup', ev => {
        if (!drag) return;
        const d = drag;
        drag = null;
        if (d.brush && P.brush) {
          const a = Math.min(P.brush[0], P.brush[1]), b = Math.max(P.brush[0], P.brush[1]);
          P.brush = null;
          if (b - a > 3) setView(V.f0 + (V.f1 - V.f0) * a / P.cssW, V.f0 + (V.f1 - V.f0) * b / P.cssW);
          else drawOverlay(P);
          return;
        }
        if (d.moved || ev.target !== P.over) return;
        const [x, y] = pos(ev);
        if (x < 0) return;
        const hit = hitTest(P, x, y);
        const c = Math.floor(x * P.dpr);
        if (c >= 0 && c < P.W && P.ev[c] >= 0) setCursor(P.R.index, P.ev[c]);
        if (hit && hit.i !== undefined) pinObject(P.R.index, hit.i, false);
        else renderAll();
      });
      P.over.addEventListener('wheel', ev => {
        ev.preventDefault();
        const [x, y] = pos(ev);
        const f = Math.pow(1.0015, ev.deltaY);
        if (ev.altKey) {
          const lo = V.yzoom ? V.yzoom[0] : P.ylo, hi = V.yzoom ? V.yzoom[1] : P.yhi;
          const at = lo + (P.h - y) / P.h * (hi - lo);
          V.yzoom = [Math.max(0, at - (at - lo) * f), at + (hi - at) * f];
          renderAll();
          return;
        }
        zoomAt(Math.max(0, Math.min(1, x / P.cssW)), f);
      }, {passive: false});
      P.over.addEventListener('dblclick', () => {
        V.yzoom = null;
        setView(0, 1);
      });
      P.bands.addEventListener('mousemove', ev => {
        const r = P.bands.getBoundingClientRect();
        const it = bandAt(P, ev.clientX - r.left, ev.clientY - r.top);
        showTip(ev, it ? `${esc(it.text)}<br>` + (it.point ? `at ${fmtNs(it.b)}<br>` :
          `${fmtNs(it.b)} – ${fmtNs(it.e)} (${fmtNs(it.e - it.b)})<br>`) +
          '<span class=stpv-hint>click to zoom to it</span>' : null);
      });
      P.bands.addEventListener('mouseleave', () => showTip(null, null));
      P.bands.addEventListener('click', ev => {
        const r = P.bands.getBoundingClientRect();
        const it = bandAt(P, ev.clientX - r.left, ev.clientY - r.top);
        if (!it) return;
        const d = domain(P.R), a = timeToUnit(P.R, it.b), b = timeToUnit(P.R, it.e);
        const pad = it.point ? d * 0.02 : (b - a) * 0.02; /* a moment: 4% of the run around it */
        setView((a - pad) / d, (b + pad) / d);
      });
    });
    el.mini.addEventListener('mousedown', ev => {
      const move = e2 => {
        const r = el.mini.getBoundingClientRect();
        const f = (e2.clientX - r.left - LEFT) / (r.width - LEFT);
        const span = V.f1 - V.f0;
        setView(f - span / 2, f + span / 2);
      };
      move(ev);
      const up = () => {
        window.removeEventListener('mousemove', move);
        window.removeEventListener('mouseup', up);
      };
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
    el.bar.querySelector('.stpv-x').addEventListener('change', ev => {
      /* keep the same stretch of the run in view */
      const R = V.ranks[0];
      const e0 = unitToEvent(R, V.f0 * domain(R)), e1 = unitToEvent(R, V.f1 * domain(R));
      V.xmode = ev.target.value;
      const d = domain(R);
      setView(eventToUnit(R, e0) / d, eventToUnit(R, Math.max(e0, e1 - 1)) / d);
    });
    el.bar.querySelector('.stpv-color').addEventListener('change', ev => {
      V.colorBy = ev.target.value;
      V.ranks.forEach(objectColors);
      renderAll();
    });
    const shared = el.bar.querySelector('.stpv-shared');
    if (shared) shared.addEventListener('change', ev => {
      V.shared = ev.target.checked;
      V.sharedMax = V.shared ? Math.max(...V.ranks.map(R => R.max)) : 0;
      renderAll();
    });
    el.bar.querySelector('.stpv-fit').addEventListener('click', () => {
      V.yzoom = null;
      renderAll();
    });
    el.bar.querySelector('.stpv-reset').addEventListener('click', () => {
      V.yzoom = null;
      setView(0, 1);
    });
    el.bar.querySelector('.stpv-peak').addEventListener('click', () => goPeak(true));
    el.hl.addEventListener('click', ev => {
      if (!ev.target.classList.contains('stpv-clear')) return;
      V.hl = null;
      highlightFlags();
      el.hl.innerHTML = '';
      renderAll();
    });
    el.tabs.addEventListener('click', ev => {
      if (ev.target.dataset.tab) setTab(ev.target.dataset.tab);
    });
    const lists = ev => {
      const t = ev.target.closest('[data-stpv-finding],[data-stpv-site],[data-stp-finding],[data-stp-site],.stpv-unpin');
      if (!t) return;
      ev.preventDefault();
      if (t.classList.contains('stpv-unpin')) {
        V.pin = null;
        renderAll();
        showDetail();
        return;
      }
      let r, k;
      if (t.dataset.stpvFinding) {
        [r, k] = t.dataset.stpvFinding.split(':').map(Number);
        selectFinding(r, k);
      } else if (t.dataset.stpvSite) {
        [r, k] = t.dataset.stpvSite.split(':').map(Number);
        selectSite(r, k);
      } else if (t.dataset.stpFinding !== undefined) {
        /* the static report's findings table: the detector's order */
        const R = V.ranks[0];
        k = (R.m.findings || []).findIndex(f => f.det === Number(t.dataset.stpFinding));
        if (k >= 0) {
          selectFinding(0, k);
          V.el.root.scrollIntoView({behavior: 'smooth'});
        }
      } else if (t.dataset.stpSite !== undefined) {
        const R = V.ranks[0];
        k = R.sd.indexOf(Number(t.dataset.stpSite));
        if (k >= 0) {
          selectSite(0, k);
          V.el.root.scrollIntoView({behavior: 'smooth'});
        }
      }
    };
    document.addEventListener('click', lists);
    if (el.slider) {
      el.slider.addEventListener('input', () => {
        V.cursor.e = Number(el.slider.value);
        overlays();
        drawSegments();
      });
      const step = d => () => {
        setCursor(V.cursor.r, V.cursor.e + d);
        overlays();
        drawSegments();
      };
      const prev = el.seg.querySelector('.stpv-prev'), next = el.seg.querySelector('.stpv-next');
      if (prev) prev.addEventListener('click', step(-1));
      if (next) next.addEventListener('click', step(1));
    }
    const src = el.seg.querySelector('.stpv-segsrc');
    if (src) src.addEventListener('change', ev => {
      V.segKey = ev.target.value;
      drawSegments();
    });
    if (el.rankSel) el.rankSel.addEventListener('change', ev => {
      const r = Number(ev.target.value);
      setCursor(r, V.ranks[r].peakEv);
      const s = el.seg.querySelector('.stpv-segsrc');
      s.innerHTML = V.ranks[r].segs.map(S => `<option value="${esc(S.key)}">${esc(S.name)}</option>`).join('');
      V.segKey = V.ranks[r].segs.length ? V.ranks[r].segs[0].key : null;
      renderAll();
    });
    const sp = el.seg.querySelector('.stpv-segpeak');
    if (sp) sp.addEventListener('click', () => goPeak(false));
    if (el.segCanvas) {
      const segHit = ev => {
        const r = el.segCanvas.getBoundingClientRect();
        const x = ev.clientX - r.left, y = ev.clientY - r.top;
        return (V.segRects || []).find(q => x >= q.x0 && x <= q.x1 && y >= q.y && y <= q.y + 20 && q.i !== undefined) ||
          (V.segRects || []).find(q => x >= q.x0 && x <= q.x1 && y >= q.y && y <= q.y + 20);
      };
      el.segCanvas.addEventListener('mousemove', ev => {
        const q = segHit(ev);
        const R = V.ranks[V.cursor.r];
        if (!q) return showTip(ev, null);
        if (q.i !== undefined) return showTip(ev, tooltipHtml(R, q.i));
        showTip(ev, `free hole of ${fmtBytes(q.hole[1])} (${fmtCount(q.hole[1])} B) at +` +
          `${fmtBytes(q.hole[0] - q.seg.addr)} in a segment of ${fmtBytes(q.seg.end - q.seg.addr)}`);
      });
      el.segCanvas.addEventListener('mouseleave', () => showTip(null, null));
      el.segCanvas.addEventListener('click', ev => {
        const q = segHit(ev);
        if (q && q.i !== undefined) pinObject(V.cursor.r, q.i, false);
      });
    }
    window.addEventListener('keydown', ev => {
      if (ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT') return;
      if (ev.key === 'Escape') {
        V.pin = null;
        V.hl = null;
        highlightFlags();
        el.hl.innerHTML = '';
        renderAll();
        showDetail();
      } else if (ev.key === '+' || ev.key === '=') {
        zoomAt(0.5, 0.7);
      } else if (ev.key === '-') {
        zoomAt(0.5, 1 / 0.7);
      }
    });
    let rt = 0;
    window.addEventListener('resize', () => {
      clearTimeout(rt);
      rt = setTimeout(renderAll, 100);
    });
  }

  function goPeak(zoom) {
    let r = 0;
    V.ranks.forEach((R, k) => {
      if (R.max > V.ranks[r].max) r = k;
    });
    if (!zoom) r = V.cursor.r;
    const R = V.ranks[r];
    setCursor(r, R.peakEv);
    if (zoom) {
      const u = eventToUnit(R, R.peakEv) / domain(R), span = Math.min(1, (V.f1 - V.f0));
      setView(u - span / 2, u + span / 2);
    } else {
      overlays();
      drawSegments();
    }
  }

  /* ------------------------------------------------------------ boot */

  async function boot() {
    const t0 = performance.now();
    const root = document.getElementById('stpv');
    const metaEl = document.getElementById('stpv-meta');
    const binEl = document.getElementById('stpv-bin');
    if (!root || !metaEl || !binEl) return;
    try {
      const T = api.timing = {};
      const meta = JSON.parse(metaEl.textContent);
      V.meta = meta;
      T.json = performance.now() - t0;
      const buf = await blob(binEl.textContent, meta.enc);
      T.inflate = performance.now() - t0;
      V.ranks = meta.ranks.map((m, k) => new Rank(m, buf, k));
      T.decode = performance.now() - t0;
      V.tmax = Math.max(1, ...V.ranks.map(R => Math.max(R.m.duration_ns, R.ne ? R.et[R.ne - 1] : 0)));
      V.ranks.forEach(objectColors);
      let r = 0;
      V.ranks.forEach((R, k) => {
        if (R.max > V.ranks[r].max) r = k;
      });
      V.cursor = {r, e: V.ranks[r].peakEv};
      /* start on the stretch where the space has events (a PyTorch run's
       * tensors come after `import torch`), and its refused requests (an
       * out-of-memory error ends many a run after the last allocation) */
      const first = Math.min(...V.ranks.map(R => (R.ne ? R.et[0] : 0)));
      const last = Math.max(...V.ranks.map(R => Math.max(R.ne ? R.et[R.ne - 1] : V.tmax,
        ...(R.m.refused || []).map(x => x[0]))));
      const pad = (last - first) * 0.02;
      V.f0 = Math.max(0, (first - pad) / V.tmax);
      V.f1 = Math.min(1, (last + pad) / V.tmax);
      buildDom(root);
      V.el.root = root;
      wire();
      setCursor(r, V.ranks[r].peakEv);
      setTab('object');
      T.dom = performance.now() - t0;
      renderAll();
      T.render = performance.now() - t0;
      api.ready = true;
      api.loadMs = performance.now();
      api.bootMs = performance.now() - t0;
    } catch (err) {
      root.innerHTML = `<p class=stpv-err>The interactive viewer could not start: ${esc(err.message)}</p>`;
      api.error = String(err && err.message || err);
      console.error(err);
    }
  }

  /* What the tests (and a curious user at the console) can ask. */
  const api = {
    ready: false,
    V,
    /* the page coordinates of a point inside object i of rank r, where it is drawn tallest */
    objectPoint(r, i) {
      const P = V.panels[r];
      const lo = outline(P, i);
      let c0 = -1, c1 = -1;
      for (let c = 0; c < P.W; c++) {
        if (isNaN(lo[c])) continue;
        if (c0 < 0) c0 = c;
        c1 = c;
      }
      if (c0 < 0) return null;
      let c = Math.floor((c0 + c1) / 2);
      while (c <= c1 && isNaN(lo[c])) c++;
      if (c > c1) return null;
      const mid = lo[c] + P.R.size[i] / 2;
      const rect = P.over.getBoundingClientRect();
      return {x: rect.left + LEFT + (c + 0.5) / P.dpr, y: rect.top + (P.H - (mid - P.ylo) * P.k) / P.dpr};
    },
    view() {
      return {f0: V.f0, f1: V.f1, xmode: V.xmode, labels: V.panels.map(P => P.axisLabels)};
    },
    /* where rank r's band items of a row are drawn (client px): for tests */
    bandPoints(r, name) {
      const P = V.panels[r], k = P.rows.findIndex(row => row.name === name);
      if (k < 0) return [];
      const rect = P.bands.getBoundingClientRect();
      return P.rows[k].items.map(it => ({text: it.text, x: rect.left + LEFT + unitToX(P.R, timeToUnit(P.R, it.b), P.cssW),
        y: rect.top + k * BAND_H + BAND_H / 2}));
    },
    segments() {
      const s = V.segLast;
      if (!s) return null;
      const R = V.ranks[V.cursor.r];
      return {cursor: V.cursor.e, peak: R.peakEv, reserved: s.reserved, allocated: s.allocated, holes: s.holes,
        segments: s.segs.map(g => ({addr: g.addr, size: g.end - g.addr, blocks: g.blocks.map(i => ({i,
          addr: (R.segs.find(S => S.key === V.segKey) || {}).addr[i], size: R.size[i]}))}))};
    },
    setSource(key) {
      V.segKey = key;
      drawSegments();
    },
    /* what a pointer at (x, y) CSS px inside rank r's plot does */
    hoverAt(r, x, y) {
      const hit = hitTest(V.panels[r], x, y);
      V.hover = hit && hit.i !== undefined ? {r, i: hit.i} : null;
      overlays();
      return V.hover;
    },
    renderAll() {
      renderAll();
    },
    drawSegments() {
      drawSegments();
    },
    find(r, line) {
      const R = V.ranks[r];
      for (let i = 0; i < R.n; i++) if (R.userLine(i) === line) return i;
      return -1;
    },
  };
  window.stprofViewer = api;
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
