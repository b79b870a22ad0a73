"""Claims in research statements and the likely conflicts between them, and the offline
side-by-side used to reconcile two statements (the DeepScholar spec: a new passage that conflicts
with the session's conclusions is reconciled before the answer, never pasted in beside them).

A statement is a retrieved passage or a recorded finding. Two statements from different sources are
compared only when they are on the same topic (cosine of their vectors, else the overlap of their
content words). They conflict when, about the same thing,
- one negates what the other asserts: the word a negation governs ("not competitive", "did not
  tune") stands un-negated in the other, with the context shared;
- they order the same two things oppositely ("A outperforms B" / "B outperforms A", "smaller than"
  / "larger than"), or move the same quantity in opposite directions ("increases" / "decreases");
- they report different numbers for the same measure: a number is compared only with numbers of
  the same measure (the metric, or what it counts: "140k question/answer pairs"), level or change,
  on the same dataset and about the same named subject, as the number was written (rounding, "over",
  "about", k/M, %, ratios and units taken into account); between two documents' passages, only of
  a thing both name, never what each writer reports of their own work or experiment's settings
  ("we train with a batch size of 32" against another paper's 64).
Everything is rule-based, English and Chinese, with no model calls: a detected conflict is a prompt
to look, and the side-by-side says so.

Read in this order: words (edges, clauses, names), metrics, numbers, conditions, negation, direction
(the parts of a claim); statements (a statement read sentence by sentence); compare (the rules that
pair two statements' sentences); explain (the sentences a person reads); detect (the entry point).
"""
from forest.research.claims.detect import TOPIC_THRESHOLD, Conflict, detect_conflicts
from forest.research.claims.explain import OFFLINE_REVIEW, side_by_side, source_label
from forest.research.claims.numbers import Measure
from forest.research.claims.statements import Claim, Statement, extract_claims

__all__ = ["OFFLINE_REVIEW", "TOPIC_THRESHOLD", "Claim", "Conflict", "Measure", "Statement", "detect_conflicts",
           "extract_claims", "side_by_side", "source_label"]
