"""What a citation opens, for the Ask and Forest pages: the cited PDF page rendered with the passage's
lines highlighted, with page navigation; or a text document's section with the passage marked.
The locating and rendering are forest.views.page_preview's; this module only displays."""
from __future__ import annotations

import base64
import html

import streamlit as st

from forest import ForestError, MemoryForest
from forest.records import MemoryNode
from forest.markdown_safety import literal, safe_markdown
from forest.text import counted
from forest.views.page_preview import PASSAGE_ZOOM, ZOOM, RenderedPage, SourcePreview, render_page
from forest.views.transcript import link_markers
from workbench import place

# Catches clicks on "#cite-<node id>" links anywhere in the page (an answer's numbered citations,
# its source list) and hands the node id to Python; a plain link would start a new session.
CITE_JS = """
export default function (component) {
  window.memoryForestCite = component.setTriggerValue;   // this run's setter
  if (window.memoryForestCiteListener) return;
  window.memoryForestCiteListener = true;
  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest('a[href^="#cite-"]');
    if (!link) return;
    event.preventDefault();
    event.stopPropagation();
    window.memoryForestCite("cited", Number(link.getAttribute("href").slice("#cite-".length)));
  }, true);
}
"""
citation_clicks = st.components.v2.component("memory_forest_citations", js=CITE_JS, isolate_styles=False)

# The rendered page in a frame of its own, scrolled to the passage's first line (a page is taller
# than the screen); the frame carries the node, the page and the highlighted rectangles for automation.
PAGE_JS = """
export default function (component) {
  const { data, parentElement } = component;
  let frame = parentElement.querySelector(".forest-page");
  if (!frame) {
    frame = document.createElement("div");
    frame.className = "forest-page";
    frame.appendChild(document.createElement("img"));
    parentElement.appendChild(frame);
  }
  const img = frame.querySelector("img");
  frame.style.maxHeight = data.height;
  frame.dataset.node = String(data.node);
  frame.dataset.page = String(data.page);
  frame.dataset.rects = JSON.stringify(data.rects);
  frame.dataset.cropped = String(data.cropped);
  frame.dataset.origin = JSON.stringify(data.origin);   // page point at the image's top left, and
  frame.dataset.zoom = String(data.zoom);                // pixels per point: for automation
  img.alt = data.alt;
  if (img.dataset.key === data.key) return;
  img.dataset.key = data.key;
  img.onload = () => {
    const first = data.rects[0];
    frame.scrollTop = first ? first[1] * img.clientWidth / img.naturalWidth - frame.clientHeight / 5 : 0;
  };
  img.src = "data:image/png;base64," + data.png;
}
"""
PAGE_CSS = """
.forest-page { overflow: auto; border: 1px solid #dde1e6; border-radius: .4rem; }
.forest-page img { width: 100%; display: block; }
"""
page_view = st.components.v2.component("memory_forest_page", js=PAGE_JS, css=PAGE_CSS, isolate_styles=False)

PASSAGE_CSS = """<style>
.forest-section p { margin: 0 0 .6rem; white-space: pre-wrap; }
.forest-section p.cited { background: #fff3b0; outline: 2px solid #e3b505; border-radius: .25rem; padding: .2rem .3rem; }
</style>"""


def cite_link(node_id: int) -> str:
    """The link target that opens a node's source (see citation_clicks)."""
    return f"#cite-{node_id}"


def passage_link(model_id: str, node: MemoryNode) -> str:
    """A passage's own address, to keep or share: the Forest page on its archive, the node chosen."""
    return place.link("tree", model_id=model_id, archive=node.archive_id, node=node.id)


def linked_citations(forest: MemoryForest, model_id: str, text: str, links: bool = True) -> str:
    """Markdown of `text` with each '[node 42, ...]' marker naming the paper, page and section it
    cites, as a link that opens the page (see citation_clicks); with links=False, the names only
    (for a table). A node deleted since keeps its marker."""
    def named(node_id: int) -> str | None:
        try:
            node = forest.node(model_id, node_id)
            paper = forest.archive(model_id, node.archive_id).document_title(node.first_leaf)
        except ForestError:
            return None
        # "Buck et al. (2018), p. 7, §3": a paper of a library is cited by author and year, else by its title
        label = node.citation if node.work else ", ".join(p for p in (paper, node.citation) if p)
        label = label.replace("[", "(").replace("]", ")")   # a bracket would end the link text
        return f"[{label}]({cite_link(node_id)})" if links else f"[{label}]"

    return link_markers(text, named)


@st.cache_data(max_entries=128, show_spinner=False)
def _preview(_forest: MemoryForest, data_dir: str, model_id: str, node_id: int) -> SourcePreview:
    return _forest.source_preview(model_id, node_id)   # the engine is not hashed: data_dir tells stores apart


@st.cache_data(max_entries=32, show_spinner=False)
def _page(pdf: str, page: int, rects: tuple[tuple[float, float, float, float], ...], around: bool) -> RenderedPage:
    return render_page(pdf, page, rects, PASSAGE_ZOOM if around else ZOOM, around_passage=around)


def show_source(forest: MemoryForest, model_id: str, node_id: int, key: str, height: str = "70vh",
                in_dialog: bool = False) -> None:
    """The node's source in the current container: its PDF page with the passage highlighted and
    buttons to turn pages, or its section's text; the passage's link to copy. `key` keeps each
    place's page apart; `height` is the page frame's (CSS); `in_dialog`: drawn in a dialog already
    (one cannot open another)."""
    try:
        preview = _preview(forest, str(forest.settings.data_dir), model_id, node_id)
        node = forest.node(model_id, node_id)
    except ForestError as exc:
        st.error(literal(f"The source of node {node_id} cannot be shown: {exc}"))
        return
    with st.container(key=f"{key}-source"):
        st.markdown(safe_markdown(f"**{preview.document}** · {preview.citation or 'no page or section'} "
                                  f"· node {node_id}"))
        link = place.absolute(passage_link(model_id, node))
        if preview.pdf is None:
            _share(link)
            _section(preview)
        else:
            _pdf_page(preview, f"{key}:{node_id}", height, in_dialog, link)


def _share(link: str) -> None:
    """The passage's own address in a popover, with a copy button."""
    with st.popover("🔗 Link", help="This passage's own address: it opens the Forest page on it."):
        st.code(link, language=None, wrap_lines=True)


def _section(preview: SourcePreview) -> None:
    if preview.page_start is not None:
        st.caption("The PDF is not in this store (an archive imported or built before files were kept): "
                   "the passage is shown in its section's text.")
    st.caption(safe_markdown(f"§{preview.section}") if preview.section
               else "The passage among its neighbours (no headings).")
    body = "".join(f'<p class="{"cited" if cited else ""}">{html.escape(text)}</p>' for text, cited in preview.passages)
    st.html(f'{PASSAGE_CSS}<div class="forest-section">{body}</div>')


AROUND, WHOLE = "Around the passage", "Whole page"


def _pdf_page(preview: SourcePreview, key: str, height: str, in_dialog: bool, link: str) -> None:
    page_key = f"source_page:{key}"
    page = st.session_state.setdefault(page_key, preview.first_page)

    def turn(to: int) -> None:
        st.session_state[page_key] = to

    back, left, where, right = st.columns([1.4, 1, 1.2, 1], vertical_alignment="center")
    back.button("Back to the passage", key=f"{key}:back", on_click=turn, args=(preview.first_page,),
                disabled=page == preview.first_page)
    left.button("◀ Previous", key=f"{key}:prev", on_click=turn, args=(page - 1,), disabled=page <= 1)
    where.markdown(f"Page **{page}** of {preview.page_count}")
    right.button("Next ▶", key=f"{key}:next", on_click=turn, args=(page + 1,), disabled=page >= preview.page_count)
    rects = preview.highlights.get(page, [])
    view_col, large_col, share_col = st.columns([2.6, 1.1, 1], vertical_alignment="center")
    with share_col:
        _share(link)
    view = view_col.segmented_control("View", [AROUND, WHOLE], default=AROUND, key=f"{key}:view",
                                      label_visibility="collapsed",
                                      help="Around the passage: its column, large enough to read; whole page: "
                                           "the page at the panel's width.") or AROUND
    if not in_dialog and large_col.button("Full page", key=f"{key}:large", icon=":material/open_in_full:",
                                          help="The whole page as large as the screen allows."):
        _large_page(preview, page, tuple(rects))
    rendered = _page(str(preview.pdf), page, tuple(rects), view == AROUND and bool(rects))
    if rects:
        others = sorted(p for p in preview.highlights if p != page)
        st.caption(f"The passage is highlighted in yellow ({counted(len(rects), 'line')})"
                   + (f"; it continues on p. {', '.join(map(str, others))}." if others else "."))
    elif preview.highlights:
        st.caption(f"The passage is on p. {', '.join(map(str, sorted(preview.highlights)))}.")
    else:
        st.warning("The passage's words were not found on this page (a scanned page or a table the parser "
                   "rearranged); it is cited here.")
    _draw(rendered, preview, page, height, f"{key}:page")


@st.dialog("Full page", width=1100)
def _large_page(preview: SourcePreview, page: int, rects: tuple[tuple[float, float, float, float], ...]) -> None:
    st.markdown(safe_markdown(f"**{preview.document}** · p. {page} of {preview.page_count}"))
    _draw(_page(str(preview.pdf), page, rects, False), preview, page, "80vh", "large-page")


def _draw(rendered: RenderedPage, preview: SourcePreview, page: int, height: str, key: str) -> None:
    page_view(data={"png": base64.b64encode(rendered.png).decode("ascii"), "node": preview.node_id, "page": page,
                    "rects": rendered.rects, "cropped": rendered.cropped,
                    "origin": rendered.origin, "zoom": rendered.zoom,
                    "key": f"{preview.pdf}:{page}:{preview.node_id}:{rendered.cropped}",
                    "alt": f"page {page} of {preview.document}", "height": height},
              key=key)
