// The attention-map explorer (attnlib/explorer.py writes its data next to this script).
// Self-contained and offline: no library, no network. Each explorer's output holds a
// <div class="attn-explorer"> with its data in <script type="application/json">, then this
// script, which draws every explorer of the page it has not drawn yet.
(function () {
  "use strict";
  const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80",
    "#5ec962", "#addc30", "#fde725"];
  const KINDS = [["self", "self"], ["previous", "prev"], ["sink", "sink"], ["induction", "ind"]];
  const MASKED = [217, 217, 217];
  const RGB = VIRIDIS.map((h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)));

  function colour(w) { // viridis, interpolated between its nine anchors
    const x = Math.min(Math.max(w, 0), 1) * 8, i = Math.min(Math.floor(x), 7), f = x - i;
    return RGB[i].map((c, k) => Math.round(c + f * (RGB[i + 1][k] - c)));
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function decode(b64) { // the float32 lower triangles, exactly as Python wrote them
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    return new Float32Array(bytes.buffer);
  }

  class Explorer {
    constructor(root, data) {
      this.root = root;
      this.data = data;
      this.texts = data.texts.map((t) => ({ ...t, w: decode(t.weights) }));
      Object.assign(this, data.start); // text, layer, head (-1: all heads), query
      this.pinned = this.query;
      this.build();
      this.show();
    }

    weight(layer, head, q, k) { // A[q, k] of one head; 0 above the diagonal (masked)
      const T = this.texts[this.text].labels.length;
      if (k > q) return 0;
      return this.texts[this.text].w[(layer * this.data.n_heads + head) * (T * (T + 1) / 2)
        + q * (q + 1) / 2 + k];
    }

    build() {
      const top = el("div", "attn-top");
      top.append(el("b", "attn-title", this.data.title));
      if (this.texts.length > 1) {
        this.picker = el("select", "attn-picker");
        this.texts.forEach((t, i) => this.picker.append(new Option(t.name, i)));
        this.picker.addEventListener("change", () => {
          this.text = +this.picker.value;
          this.pinned = this.query = this.texts[this.text].labels.length - 1;
          this.show();
        });
        top.append(this.picker);
      }
      top.append(el("span", "attn-hint", "Point at a token to see where it looks; click to "
        + "keep it. Click a map to pick its head, a layer's name for all its heads."));
      this.grid = el("div", "attn-grid");
      this.side = el("div", "attn-side");
      const body = el("div", "attn-body");
      body.append(this.grid, this.side);
      this.root.replaceChildren(top, body);
    }

    show() {
      this.drawGrid();
      this.drawSide();
    }

    drawGrid() {
      const { n_layers, n_heads } = this.data;
      const T = this.texts[this.text].labels.length;
      this.grid.replaceChildren();
      for (let layer = 0; layer < n_layers; layer++) {
        const row = el("div", "attn-row");
        const name = el("button", "attn-layer", `layer ${layer}`);
        name.title = `all heads of layer ${layer}`;
        name.addEventListener("click", () => this.choose(layer, -1));
        row.append(name);
        for (let head = 0; head < n_heads; head++) {
          const cell = el("div", "attn-map");
          const chosen = layer === this.layer && (this.head === -1 || head === this.head);
          if (chosen) cell.classList.add("attn-chosen");
          const canvas = el("canvas");
          canvas.width = canvas.height = T;
          this.paint(canvas, layer, head, T);
          const marker = el("div", "attn-qrow");
          marker.style.top = `${(100 * this.query) / T}%`;
          marker.style.height = `${100 / T}%`;
          const frame = el("div", "attn-frame");
          frame.append(canvas, marker);
          cell.append(frame, el("div", "attn-caption", `${layer}.${head}`));
          cell.title = `head ${layer}.${head}: rows are queries, columns keys`;
          cell.addEventListener("click", () => this.choose(layer, head));
          row.append(cell);
        }
        this.grid.append(row);
      }
    }

    paint(canvas, layer, head, T) {
      const ctx = canvas.getContext("2d");
      const image = ctx.createImageData(T, T);
      for (let q = 0; q < T; q++) {
        for (let k = 0; k < T; k++) {
          const rgb = k > q ? MASKED : colour(this.weight(layer, head, q, k));
          image.data.set([...rgb, 255], 4 * (q * T + k));
        }
      }
      ctx.putImageData(image, 0, 0);
    }

    choose(layer, head) {
      this.layer = layer;
      this.head = head;
      this.show();
    }

    heads() {
      if (this.head >= 0) return [this.head];
      return Array.from({ length: this.data.n_heads }, (_, h) => h);
    }

    drawSide() {
      const text = this.texts[this.text];
      const lines = el("div", "attn-lines");
      for (const head of this.heads()) {
        const line = el("div", "attn-line");
        line.dataset.head = `${this.layer}.${head}`;
        line.append(el("span", "attn-which", `${this.layer}.${head}`));
        const tokens = el("span", text.chars ? "attn-text attn-chars" : "attn-text");
        text.labels.forEach((label, k) => tokens.append(this.token(label, k, head, text.chars)));
        line.append(tokens);
        lines.append(line);
      }
      lines.addEventListener("mouseleave", () => this.point(this.pinned));
      const q = text.labels[this.query];
      const about = el("div", "attn-about",
        `query ${this.query} (${JSON.stringify(q)}): shade = its weight on each key`);
      this.side.replaceChildren(about, lines, this.table());
    }

    token(label, k, head, chars) {
      const span = el("span", "attn-tok");
      const shown = label === "\n" ? "\u21b5" : label;
      span.textContent = shown;
      span.dataset.k = k;
      if (label === "BOS" || (chars && label.length > 1)) span.classList.add("attn-special");
      if (k > this.query) {
        span.classList.add("attn-future");
        span.dataset.w = "0";
      } else {
        const w = this.weight(this.layer, head, this.query, k);
        span.style.background = `rgba(0, 114, 178, ${w})`; // the darker, the more weight
        if (w > 0.5) span.style.color = "#fff";
        span.dataset.w = String(w);
        span.title = `key ${k} ${JSON.stringify(label)}: ${w.toFixed(3)}`;
      }
      if (k === this.query) span.classList.add("attn-query");
      span.addEventListener("mouseenter", () => this.point(k));
      span.addEventListener("click", () => { this.pinned = k; this.point(k); });
      const out = [span];
      if (label === "\n") out.push(el("br"));
      const frag = document.createDocumentFragment();
      frag.append(...out);
      return frag;
    }

    point(q) {
      if (q === this.query) return;
      this.query = q;
      this.show();
    }

    table() {
      const table = el("table", "attn-scores");
      const head = el("tr");
      head.append(el("th", "", "head"), ...KINDS.map(([, short]) => el("th", "", short)));
      table.append(head);
      for (const h of this.heads()) {
        const row = el("tr");
        row.append(el("td", "", `${this.layer}.${h}`));
        const scores = this.texts[this.text].scores[this.layer][h];
        for (const [kind] of KINDS) {
          const s = scores[kind];
          const cell = el("td", "", s === null ? "\u2013" : s.toFixed(2));
          cell.dataset.kind = kind;
          row.append(cell);
        }
        table.append(row);
      }
      const note = el("caption", "", "scores of this text: share of each head's weight on "
        + "itself, the previous token, BOS (sink), the token after an earlier copy of the "
        + "query's token (induction)");
      table.append(note);
      return table;
    }
  }

  for (const root of document.querySelectorAll(".attn-explorer:not([data-drawn])")) {
    const data = root.querySelector("script.attn-data");
    if (!data) continue;
    root.dataset.drawn = "1";
    root.explorer = new Explorer(root.querySelector(".attn-view"), JSON.parse(data.textContent));
  }
})();
