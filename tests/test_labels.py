"""The offline names of groups (summary nodes without a heading): a key phrase as the text writes
it, never a citation's name or year, no two siblings alike; a reference list named by its place."""
import re

import pytest

from forest.models.extractive import TermStats, group_labels

DISCOURSE = ("Discourse parsing finds the relations between clauses. Early discourse parsing relied on "
             "connectives such as because (Peterson et al., 1988). Marcu and Echihabi (2002) trained a discourse "
             "parsing model on unlabelled text. A discourse parsing model still misses implicit relations.")
SOCIAL = ("Social media posts explain why things happen in a writer's life. Posts on social media are short "
          "and noisy [12]. Life events such as moving house fill social media, as Kim (2014) observed in 1,000 "
          "posts from 2013.")
REFERENCES = ("Christopher Peterson, Amy Semmel, Carl von Baeyer. 1988. The attributional style questionnaire. "
              "Cognitive Therapy and Research 6(3):287-299.\n\nDaniel Marcu and Abdessamad Echihabi. 2002. An "
              "unsupervised approach to recognizing discourse relations. In Proceedings of ACL, pages 368-375.\n\n"
              "Yoon Kim. 2014. Convolutional neural networks for sentence classification. arXiv preprint "
              "arXiv:1408.5882.")
OTHER = ("We train the classifier with Adam for ten epochs. The classifier reaches an F1 of 0.71 on held-out "
         "posts. Errors come from sarcasm and from posts without any causal connective.")


def stats() -> TermStats:
    return TermStats.from_texts([DISCOURSE, SOCIAL, REFERENCES, OTHER])


def words(text: str) -> list[str]:
    return re.findall(r"[\w-]+", text.lower())


def test_a_group_is_named_by_a_phrase_of_its_own_text_without_names_or_years():
    discourse, social = group_labels([DISCOURSE, SOCIAL], stats())
    assert discourse == "Discourse parsing" and social == "Social media"
    for label, text in ((discourse, DISCOURSE), (social, SOCIAL)):
        assert " ".join(words(label)) in " ".join(words(text))        # a phrase the text holds, in order
        assert not re.search(r"\d|peterson|marcu|echihabi|kim|et al", label.lower())


def test_siblings_never_share_a_phrase():
    first, second = group_labels([DISCOURSE, DISCOURSE.replace("Early", "Later")], stats())
    assert first and second and not set(words(first)) & set(words(second))


def test_a_reference_list_gets_no_phrase():
    assert group_labels([REFERENCES], stats()) == [None]


@pytest.mark.slow
def test_sections_of_a_built_paper_have_readable_group_titles(forest):
    """A long section splits into groups: each is named by a phrase of its text, and the groups of
    the reference list by their place."""
    section = "\n\n".join([DISCOURSE, SOCIAL, OTHER] * 5)
    references = "\n\n".join([REFERENCES] * 8)
    archive = forest.ingest_text("reader", "paper", f"# A Paper\n\n## 1 Introduction\n\n{section}\n\n"
                                                     f"## References\n\n{references}")
    nodes = forest.tree("reader", archive.id)
    by_id = {n.id: n for n in nodes}
    groups = [n for n in nodes if not n.is_leaf and n.parent_id is not None
              and by_id[n.parent_id].title in ("1 Introduction", "References")]
    assert {by_id[g.parent_id].title for g in groups} == {"1 Introduction", "References"}
    assert all(" · " not in g.title for g in groups)
    for group in groups:
        if by_id[group.parent_id].title == "References":
            assert re.fullmatch(r"References, part \d+ of \d+", group.title)
        else:
            assert not re.search(r"\d|peterson|marcu|kim|et al", group.title.lower())
    siblings = [g.title for g in groups]
    assert len(siblings) == len(set(siblings))

