// The Forest page's tree: an outline (a foldable table of contents) beside a vis-network drawing,
// laid out left to right (depth across, document order down) so titles read like a contents page.
// Folding happens here, in the browser; a click on a node (in either view) goes back to Python.
// Data: forest/tree_view.py vis_data. Runs in the page (components v2), not in an iframe.
const ROW = { summary: 72, leaf: 48, caption: 48 };   // a title takes up to three lines, a passage two
const BOX = { summary: 200, leaf: 240, caption: 240 };
const COLUMN = 250;
const READABLE = 0.72;   // the smallest zoom at which a passage's words can still be read

// A passage's pale fill, mixed with white rather than see-through: an edge behind a box stays hidden.
function tint(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  const mix = (c) => Math.round(255 - (255 - c) * alpha);
  return `rgb(${mix(n >> 16)}, ${mix((n >> 8) & 255)}, ${mix(n & 255)})`;
}

class ForestView {
  constructor(parent, data) {
    this.data = data;
    this.byId = new Map(data.nodes.map((n) => [n.id, n]));
    this.children = new Map();
    for (const n of data.nodes) {
      if (n.parent === null) continue;
      if (!this.children.has(n.parent)) this.children.set(n.parent, []);
      this.children.get(n.parent).push(n.id);
    }
    const byOrder = (a, b) => this.byId.get(a).order - this.byId.get(b).order;
    for (const list of this.children.values()) list.sort(byOrder);
    this.roots = data.nodes.filter((n) => n.parent === null).map((n) => n.id).sort(byOrder);
    // what the server unfolds (two levels, the selection's path): the first view and "Fold"
    this.initiallyOpen = data.nodes.filter((n) => n.open).map((n) => n.id);
    this.open = new Set(this.initiallyOpen);
    this.selected = null;
    this.trigger = () => {};

    this.root = document.createElement("div");
    this.root.className = "forest-view";
    this.root.innerHTML = `
      <div class="forest-bar">
        <button type="button" data-act="fit" title="Zoom out until all that is unfolded is in view">Fit</button>
        <button type="button" data-act="unfold">Unfold all</button>
        <button type="button" data-act="fold">Fold to two levels</button>
        <span class="forest-legend"></span>
      </div>
      <div class="forest-panes"><nav class="forest-outline" aria-label="Outline"></nav>
        <div class="forest-drawing"><div id="forest-tree"></div><div class="forest-tip" role="tooltip" hidden></div></div></div>`;
    parent.appendChild(this.root);
    this.holder = this.root.querySelector("#forest-tree");
    this.tip = this.root.querySelector(".forest-tip");
    this.outline = this.root.querySelector(".forest-outline");
    const legend = this.root.querySelector(".forest-legend");
    for (const item of data.legend) {
      const key = document.createElement("span");
      key.className = `forest-key forest-key-${item.kind}`;
      key.style.setProperty("--key", item.colour);
      key.textContent = item.label;
      legend.appendChild(key);
    }
    this.root.querySelector(".forest-bar").addEventListener("click", (event) => {
      const act = event.target.dataset && event.target.dataset.act;
      if (act === "fit") this.frame(true);
      if (act === "unfold") {
        this.setOpen(new Set(this.children.keys()));
        this.frame();
      }
      if (act === "fold") {
        this.setOpen(new Set(this.initiallyOpen));
        this.frame();
      }
    });
    for (const id of this.roots) this.outline.appendChild(this.entry(id));

    // Only what is unfolded is handed to vis-network (each node it holds costs a text measure),
    // so a 1,000-passage tree draws as fast as its contents page.
    this.nodes = new vis.DataSet();
    this.edges = new vis.DataSet();
    this.edgeTo = new Map(data.edges.map((e) => [e.to, { ...e, id: `${e.from}-${e.to}` }]));
    this.place();
    this.network = new vis.Network(this.holder, { nodes: this.nodes, edges: this.edges }, data.options);
    this.network.once("afterDrawing", () => {
      this.holder.dataset.drawn = String(data.nodes.length);
      this.reveal();
    });
    // Drawn before its column had its width (a first draw, a column that grew), it frames again,
    // until the person pans or zooms: from then on the view is theirs.
    this.moved = false;
    this.network.on("dragStart", () => { this.moved = true; });
    this.network.on("zoom", () => { this.moved = true; });
    this.resized = new ResizeObserver(() => {
      if (!this.holder.clientWidth) return;
      this.network.setSize("100%", "100%");   // the canvas takes the holder's new size first
      if (!this.moved) this.reveal();
    });
    this.resized.observe(this.holder);
    this.network.on("click", (event) => {
      if (event.nodes.length) this.select(event.nodes[0], true);
    });
    this.network.on("doubleClick", (event) => {
      const id = event.nodes[0];
      if (this.children.has(id)) this.toggle(id, !this.open.has(id));
    });
    // The summary in a tooltip of our own, shown while the pointer is on a box and gone as soon as
    // it is not: off the box, off the drawing, or dragging and zooming.
    this.holder.addEventListener("mousemove", (event) => {
      const room = this.holder.getBoundingClientRect();
      const at = { x: event.clientX - room.left, y: event.clientY - room.top };
      const id = event.buttons ? undefined : this.network.getNodeAt(at);
      if (id === undefined) this.hideTip();
      else this.showTip(id, at);
    });
    this.holder.addEventListener("mouseleave", () => this.hideTip());
    for (const name of ["dragStart", "zoom"]) this.network.on(name, () => this.hideTip());
  }

  showTip(id, at) {
    const n = this.byId.get(id);
    if (!n) return;
    this.tip.textContent = n.tip;
    this.tip.hidden = false;
    const room = this.holder.getBoundingClientRect();
    const x = Math.min(at.x + 14, room.width - this.tip.offsetWidth - 4);
    const below = at.y + 18 + this.tip.offsetHeight <= room.height;
    this.tip.style.left = `${Math.max(4, x)}px`;
    this.tip.style.top = `${below ? at.y + 18 : Math.max(4, at.y - 12 - this.tip.offsetHeight)}px`;
  }

  hideTip() {
    this.tip.hidden = true;
  }

  style(n) {
    const passage = n.kind !== "summary";
    return {
      id: n.id, label: n.label, shape: "box", margin: 6,
      widthConstraint: { minimum: BOX[n.kind], maximum: BOX[n.kind] },
      color: {
        background: passage ? tint(n.color, 0.16) : n.color, border: n.color,
        highlight: { background: passage ? tint(n.color, 0.3) : n.color, border: "#111" },
        hover: { background: passage ? tint(n.color, 0.3) : n.color, border: "#111" },
      },
      font: { color: passage ? "#1f2a22" : "#ffffff", size: passage ? 13 : 15, align: "left" },
      borderWidth: n.lit ? 4 : passage ? 2 : 1, borderWidthSelected: 5,
    };
  }

  shown(id) {
    return this.nodes.get(id) !== null;
  }

  // Depth across, document order down; a folded node's subtree is left out and takes one row.
  place() {
    const place = new Map();
    let y = 0;
    const visit = (id) => {
      const kids = this.open.has(id) ? this.children.get(id) || [] : [];
      if (!kids.length) {
        const h = ROW[this.byId.get(id).kind];
        place.set(id, y + h / 2);
        y += h;
        return;
      }
      kids.forEach(visit);
      place.set(id, (place.get(kids[0]) + place.get(kids[kids.length - 1])) / 2);
    };
    for (const id of this.roots) {
      visit(id);
      y += ROW.summary;
    }
    const shown = this.data.nodes.filter((n) => place.has(n.id)).map((n) => {
      const folded = this.children.has(n.id) && !this.open.has(n.id);
      return { ...this.style(n), x: n.depth * COLUMN, y: place.get(n.id), label: folded ? `▸ ${n.label}  (${n.leaves})` : n.label };
    });
    this.nodes.remove(this.nodes.getIds({ filter: (n) => !place.has(n.id) }));
    this.nodes.update(shown);
    this.edges.remove(this.edges.getIds({ filter: (e) => !place.has(e.to) }));
    this.edges.update(shown.filter((n) => this.edgeTo.has(n.id)).map((n) => this.edgeTo.get(n.id)));
  }

  // The selected node if it is below the top level, else the whole of what is unfolded.
  reveal() {
    if (this.selected !== null && this.byId.get(this.selected).parent !== null) {
      this.network.focus(this.selected, { scale: Math.max(this.network.getScale(), 0.8) });
      return;
    }
    this.frame();
  }

  // What is unfolded, as large as fits but never smaller than READABLE (vis-network's fit() shrinks
  // a 100-passage column to bars), its top in view; when it is too wide, its left edge. `all`
  // (the Fit button): everything in view, however small.
  frame(all = false) {
    const boxes = this.nodes.get().map((n) => {
      const kind = this.byId.get(n.id).kind;
      return { left: n.x - BOX[kind] / 2, right: n.x + BOX[kind] / 2, top: n.y - ROW[kind] / 2, bottom: n.y + ROW[kind] / 2 };
    });
    if (!boxes.length) return;
    const margin = 20;
    const left = Math.min(...boxes.map((b) => b.left)) - margin, right = Math.max(...boxes.map((b) => b.right)) + margin;
    const top = Math.min(...boxes.map((b) => b.top)) - margin, bottom = Math.max(...boxes.map((b) => b.bottom)) + margin;
    const width = this.holder.clientWidth, height = this.holder.clientHeight;
    const fits = Math.min(1, width / (right - left), height / (bottom - top));
    const scale = all ? fits : Math.max(READABLE, fits);
    const x = (right - left) * scale <= width ? (left + right) / 2 : left + width / (2 * scale);
    const y = top + height / (2 * scale);   // the top in view, as a contents page starts
    this.network.moveTo({ position: { x, y }, scale });
  }

  entry(id) {
    const n = this.byId.get(id);
    const line = document.createElement("span");
    line.className = "forest-entry" + (n.lit ? " forest-lit" : "");
    line.dataset.id = id;
    if (n.lit) line.style.setProperty("--lit", n.color);
    const name = document.createElement("span");
    name.textContent = n.text;
    const facts = document.createElement("small");
    facts.textContent = [n.pages, n.kind === "summary" ? `${n.leaves} passages` : ""].filter(Boolean).join(" · ");
    line.append(name, " ", facts);
    line.addEventListener("click", (event) => {
      event.preventDefault();   // a click on the name selects; the marker folds
      this.select(id, true);
      this.network.focus(id, { scale: Math.max(this.network.getScale(), 0.7), animation: { duration: 250 } });
    });
    const kids = this.children.get(id);
    if (!kids) {
      const leaf = document.createElement("div");
      leaf.className = "forest-leaf";
      leaf.appendChild(line);
      return leaf;
    }
    const details = document.createElement("details");
    details.dataset.id = id;
    const summary = document.createElement("summary");
    summary.appendChild(line);
    details.appendChild(summary);
    details.addEventListener("toggle", (event) => {
      event.stopPropagation();
      if (details.open !== this.open.has(id)) this.toggle(id, details.open);
    });
    this.setDetails(details, this.open.has(id));
    return details;
  }

  // A folded entry's children are made when it first opens: a 1,000-passage outline starts small.
  setDetails(details, open) {
    if (open && details.children.length === 1) {
      for (const kid of this.children.get(Number(details.dataset.id))) details.appendChild(this.entry(kid));
    }
    if (details.open !== open) details.open = open;
  }

  toggle(id, open) {
    const next = new Set(this.open);
    if (open) next.add(id);
    else next.delete(id);
    this.setOpen(next);
  }

  setOpen(open) {
    this.open = open;
    for (const details of this.outline.querySelectorAll("details")) this.setDetails(details, open.has(Number(details.dataset.id)));
    this.place();
  }

  select(id, fromUser) {
    if (!this.byId.has(id)) return;
    const next = new Set(this.open);
    for (let p = this.byId.get(id).parent; p !== null; p = this.byId.get(p).parent) next.add(p);
    if (next.size !== this.open.size) this.setOpen(next);
    this.network.selectNodes([id]);
    for (const el of this.outline.querySelectorAll(".forest-selected")) el.classList.remove("forest-selected");
    const line = this.outline.querySelector(`.forest-entry[data-id="${id}"]`);
    line.classList.add("forest-selected");
    const box = this.outline.getBoundingClientRect(), at = line.getBoundingClientRect();
    if (at.top < box.top || at.bottom > box.bottom) this.outline.scrollTop += at.top - box.top - box.height / 3;
    const moved = this.selected !== id;
    this.selected = id;
    if (fromUser) this.trigger("selected", id);
    else if (moved && this.holder.dataset.drawn) this.reveal();
  }
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  // Streamlit calls this again on every rerun: keep the drawing (and its zoom, folds) unless the
  // tree itself changed (another merge step or overlay); a new selection only moves the highlight.
  let view = parentElement.forestView;
  if (!view || view.data.key !== data.key) {
    if (view) {
      view.resized.disconnect();
      view.network.destroy();
      view.root.remove();
    }
    view = new ForestView(parentElement, data);
    parentElement.forestView = view;
    window.memoryForestView = view;   // for browser automation (tests, screenshots, the bench)
    window.memoryForestNetwork = view.network;
  }
  view.trigger = setTriggerValue;
  if (data.selected !== null && data.selected !== view.selected) view.select(data.selected, false);
  return () => {
    view.resized.disconnect();
    view.network.destroy();
    view.root.remove();
    delete parentElement.forestView;
  };
}
