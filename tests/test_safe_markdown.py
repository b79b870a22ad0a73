"""forest.markdown_safety.safe_markdown, the one sanitizer every page puts untrusted Markdown through (what
it does to a page is tested in a real browser: tests/test_browser_markdown.py)."""
import time

import pytest

from forest.markdown_safety import images_as_links, safe_markdown


def test_the_pages_own_links_stay_and_the_text_reads_as_written():
    ours = "Bebop came from New York [\\[1\\]](#cite-42).\n\n1. [Jazz notes, p. 3](#cite-42)"
    assert safe_markdown(ours) == ours
    assert safe_markdown("See ![chart](http://x/c.png)") == "See !\\[chart]\\(http\u2060://x/c.png)"


@pytest.mark.parametrize("adversarial", [
    "](" + " " * 200_000, "](" * 100_000, "](<" * 100_000, "]( <" * 100_000 + "x", "![" * 100_000,
    "<" * 200_000, "http" * 100_000, "www." * 100_000, "a" * 400_000,
    "![a](" + "x" * 200_000, "![a](" * 80_000, "![" + "a" * 199 + "](" + "x" * 2047 + " " * 9,
])
@pytest.mark.parametrize("sanitize", [safe_markdown, images_as_links])
def test_linear_time_on_adversarial_text(adversarial, sanitize):
    start = time.perf_counter()
    sanitize(adversarial)
    assert time.perf_counter() - start < 1.0


def test_the_export_writes_images_as_links_and_escapes_the_rest():
    assert images_as_links("See ![chart](http://x/c.png) and ![fig][1] <img src=x>") == \
        "See [chart](http://x/c.png) and !\\[fig][1] \\<img src=x>"
