// The attention-map explorer (attnlib/explorer.py writes its data next to this script).
// Self-contained and offline: no library, no network. Each explorer's output holds a
// <div class="attn-explorer"> with its data in <script type="application/json">, then this
// script, which draws every explorer of the page it has not drawn yet.
// By keyboard (WCAG 2.1.1): the maps and each line of text are one tab stop each (a roving
// tabindex); arrow keys, Home and End move, Enter or Space picks a head or keeps a query,
// Escape lets a query go. Every redraw puts focus back on the control that was used.
(function () {
  "use strict";
  const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80",
    "#5ec962", "#addc30", "#fde725"];
  const KINDS = [["self", "self"], ["previous", "prev"], ["sink", "sink"], ["induction", "ind"]];
  const MASKED = [217, 217, 217];
  const SHADE = [0, 114, 178]; // a token's shade at weight 1 (Okabe-Ito blue)
  const TOP = 3; // keys the live region names per head
  const RGB = VIRIDIS.map((h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)));
  const SPOKEN = { "\n": "newline", " ": "space" };

  function colour(w) { // viridis, interpolated between its nine anchors
    const x = Math.min(Math.max(w, 0), 1) * 8, i = Math.min(Math.floor(x), 7), f = x - i;
    return RGB[i].map((c, k) => Math.round(c + f * (RGB[i + 1][k] - c)));
  }

  function shade(w) { // SHADE at opacity w over white, as an opaque colour
    return SHADE.map((c) => Math.round(255 + w * (c - 255)));
  }

  function ink(rgb) { // black or white text, whichever contrasts more: >= 4.58:1 on any shade
    const [r, g, b] = rgb.map((c) => (c / 255 <= 0.04045 ? c / 255 / 12.92
      : ((c / 255 + 0.055) / 1.055) ** 2.4));
    const L = 0.2126 * r + 0.7152 * g + 0.0722 * b; // WCAG relative luminance
    return (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? "#000" : "#fff";
  }

  function say(label) { // a token as a screen reader should read it
    return `\u2018${SPOKEN[label] || label}\u2019`;
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

  function step(key, at, last) { // where an arrow, Home or End key moves a position to
    const moves = { ArrowLeft: at - 1, ArrowUp: at - 1, ArrowRight: at + 1, ArrowDown: at + 1,
      Home: 0, End: last };
    return key in moves ? Math.min(Math.max(moves[key], 0), last) : null;
  }

  function handled(event) { // ours alone: JupyterLab's shortcuts must not see the key
    event.preventDefault();
    event.stopPropagation();
  }

  class Explorer {
    constructor(root, data) {
      this.root = root;
      this.data = data;
      this.texts = data.texts.map((t) => ({ ...t, w: decode(t.weights) }));
      Object.assign(this, data.start); // text, layer, head (-1: all heads), query
      this.pinned = this.query;
      this.at = { layer: this.layer, head: Math.max(this.head, 0) }; // the maps' tab stop
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
        const label = el("label", "attn-pick", "text ");
        label.append(this.picker);
        top.append(label);
      }
      top.append(el("span", "attn-hint", "Point at a token to see where it looks; click to "
        + "keep it. Click a map to pick its head, a layer's name for all its heads. By "
        + "keyboard: Tab to the maps or the text, arrow keys move, Enter picks a head or "
        + "keeps a query, Escape lets it go."));
      this.grid = el("div", "attn-grid");
      this.grid.setAttribute("role", "group");
      this.grid.setAttribute("aria-label", "heads: a map per layer and head, rows queries, "
        + "columns keys");
      this.live = el("div", "attn-about"); // what the view shows, read out as it changes
      this.live.setAttribute("aria-live", "polite");
      this.lines = el("div", "attn-content");
      this.side = el("div", "attn-side");
      this.side.append(this.live, this.lines);
      const body = el("div", "attn-body");
      body.append(this.grid, this.side);
      this.root.replaceChildren(top, body);
    }

    show(focus) {
      const active = this.root.contains(document.activeElement) && document.activeElement;
      const key = focus || (active && active.dataset.key);
      this.drawGrid();
      this.drawSide();
      this.live.textContent = this.summary();
      const target = key && this.root.querySelector(`[data-key="${key}"]`);
      if (target) target.focus({ preventScroll: true });
    }

    drawGrid() {
      const { n_layers, n_heads } = this.data;
      this.grid.replaceChildren();
      for (let layer = 0; layer < n_layers; layer++) {
        const row = el("div", "attn-row");
        const name = el("button", "attn-layer", `layer ${layer}`);
        name.title = `all heads of layer ${layer}`;
        name.dataset.key = `layer-${layer}`;
        name.setAttribute("aria-pressed", String(layer === this.layer && this.head === -1));
        name.addEventListener("click", () => this.choose(layer, -1));
        row.append(name);
        for (let head = 0; head < n_heads; head++) row.append(this.map(layer, head));
        this.grid.append(row);
      }
    }

    map(layer, head) { // one head's map: a toggle button named by its scores
      const T = this.texts[this.text].labels.length;
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
      const scores = this.texts[this.text].scores[layer][head];
      const named = KINDS.map(([kind]) => `${kind} ${scores[kind] === null ? "none"
        : scores[kind].toFixed(2)}`);
      cell.setAttribute("role", "button");
      // its name starts with its visible caption (WCAG 2.5.3, label in name)
      cell.setAttribute("aria-label", `${layer}.${head}: layer ${layer}, head ${head}, `
        + named.join(", "));
      cell.setAttribute("aria-pressed", String(chosen));
      cell.dataset.key = `map-${layer}-${head}`;
      cell.tabIndex = layer === this.at.layer && head === this.at.head ? 0 : -1;
      cell.addEventListener("click", () => this.choose(layer, head));
      cell.addEventListener("keydown", (event) => this.mapKey(event, layer, head));
      return cell;
    }

    mapKey(event, layer, head) {
      if (event.key === "Enter" || event.key === " ") {
        handled(event);
        this.choose(layer, head);
        return;
      }
      const vertical = event.key === "ArrowUp" || event.key === "ArrowDown";
      const moved = vertical ? step(event.key, layer, this.data.n_layers - 1)
        : step(event.key, head, this.data.n_heads - 1);
      if (moved === null) return;
      handled(event);
      this.at = vertical ? { layer: moved, head } : { layer, head: moved };
      const next = this.grid.querySelector(`[data-key="map-${this.at.layer}-${this.at.head}"]`);
      event.currentTarget.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
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
      this.at = { layer, head: Math.max(head, 0) };
      this.show();
    }

    heads() {
      if (this.head >= 0) return [this.head];
      return Array.from({ length: this.data.n_heads }, (_, h) => h);
    }

    summary() { // the query and the keys each shown head weights most, in words
      const labels = this.texts[this.text].labels;
      const keys = labels.slice(0, this.query + 1).map((_, k) => k);
      const heads = this.heads().map((head) => {
        const w = (k) => this.weight(this.layer, head, this.query, k);
        const top = [...keys].sort((a, b) => w(b) - w(a)).slice(0, TOP);
        const named = top.map((k) => `position ${k} ${say(labels[k])} ${w(k).toFixed(2)}`);
        return `Head ${this.layer}.${head} looks most at ${named.join(", ")}.`;
      });
      return `Query ${this.query} ${say(labels[this.query])}, shade = its weight on each `
        + `key. ${heads.join(" ")}`;
    }

    drawSide() {
      const text = this.texts[this.text];
      const lines = el("div", "attn-lines");
      this.heads().forEach((head, i) => {
        const line = el("div", "attn-line");
        line.dataset.head = `${this.layer}.${head}`;
        line.append(el("span", "attn-which", `${this.layer}.${head}`));
        const tokens = el("span", text.chars ? "attn-text attn-chars" : "attn-text");
        tokens.setAttribute("role", "listbox");
        tokens.setAttribute("aria-label", `head ${this.layer}.${head}: the weight of query `
          + `${this.query} on each token`);
        text.labels.forEach((label, k) => tokens.append(this.token(label, k, head, i)));
        tokens.addEventListener("keydown", (event) => this.tokenKey(event, i));
        line.append(tokens);
        lines.append(line);
      });
      lines.addEventListener("mouseleave", () => this.point(this.pinned));
      this.lines.replaceChildren(lines, this.table());
    }

    token(label, k, head, line) {
      const span = el("span", "attn-tok");
      span.textContent = label === "\n" ? "\u21b5" : label;
      span.dataset.k = k;
      span.dataset.key = `tok-${line}-${k}`;
      span.setAttribute("role", "option");
      span.setAttribute("aria-selected", String(k === this.query));
      span.tabIndex = k === this.query && line === 0 ? 0 : -1;
      if (label === "BOS" || (this.texts[this.text].chars && label.length > 1)) {
        span.classList.add("attn-special");
      }
      if (k > this.query) {
        span.classList.add("attn-future");
        span.dataset.w = "0";
        span.setAttribute("aria-label", `position ${k}, ${say(label)}, after the query`);
      } else {
        const w = this.weight(this.layer, head, this.query, k);
        const rgb = shade(w); // the darker, the more weight
        span.style.background = `rgb(${rgb.join(", ")})`;
        span.style.color = ink(rgb);
        span.dataset.w = String(w);
        span.title = `key ${k} ${JSON.stringify(label)}: ${w.toFixed(3)}`;
        span.setAttribute("aria-label", `position ${k}, ${say(label)}, weight ${w.toFixed(2)}`);
      }
      if (k === this.query) span.classList.add("attn-query");
      span.addEventListener("mouseenter", () => this.point(k));
      span.addEventListener("click", () => { this.pinned = k; this.point(k); });
      const frag = document.createDocumentFragment();
      frag.append(span);
      if (label === "\n") frag.append(el("br"));
      return frag;
    }

    tokenKey(event, line) {
      const last = this.texts[this.text].labels.length - 1;
      if (event.key === "Enter" || event.key === " ") this.pinned = this.query;
      else if (event.key === "Escape") this.point(this.pinned, line);
      else {
        const q = step(event.key, this.query, last);
        if (q === null) return;
        this.point(q, line);
      }
      handled(event);
    }

    point(q, line) { // the query follows the pointer, or the keys on a line of text
      if (q === this.query) return;
      this.query = q;
      this.show(line === undefined ? undefined : `tok-${line}-${q}`);
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
