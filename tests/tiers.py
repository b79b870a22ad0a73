"""The test tiers. `make test` runs everything; `make test-fast` runs
`-m "not slow and not browser and not faults"`. tests/conftest.py marks each collected test here:
- browser: its module drives headless Chromium (it imports tests/test_browser.py's driver or skip);
- faults: its module kills real writer processes (test_faults.py);
- slow: measured at 1.5 s or more of CPU time (the test's process and the processes it starts,
  setup and teardown included; CPU rather than wall time, so a busy machine does not move a test
  between tiers; ~2 s of wall time on an idle one). Measure with `pytest --durations=0`, or a
  plugin summing resource.getrusage around pytest_runtest_protocol, and update the lists below;
  a module listed whole has only slow tests.
"""
from __future__ import annotations

import sys

import pytest

FAULT_MODULES = frozenset({"test_faults.py"})
SLOW_MODULES = frozenset({
    "test_reconcile_page.py",
})
SLOW_TESTS = frozenset({  # "file::test name", parameters included
    'test_agent.py::test_claude_decides_with_the_seed_prompt_and_bad_replies_fall_back',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: /dev/zero-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: another format-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: not JSON-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: over 100,000 nodes-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: passages over max_document_chars (20,000)-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[corrupt PDF (random bytes)-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[document over max_document_chars (20,000)-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[empty / whitespace document-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[empty / whitespace document-workbench]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[ingest: a named pipe (FIFO) instead of a file-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[threshold outside 0-1 (5, NaN)-CLI]',
    'test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[unsupported file type (.docx)-CLI]',
    'test_build.py::test_an_archive_cut_by_the_recursive_splitter_grows_the_same_way',
    'test_build.py::test_chinese_text_keeps_its_language_and_the_length_limit',
    'test_build.py::test_leaves_are_whole_paragraphs_embedded_after_their_title_and_headings',
    'test_cli.py::test_ask_over_a_chosen_archive',
    'test_cli.py::test_doctor_and_config',
    'test_cli.py::test_errors_are_one_line_on_stderr[args4-no such file]',
    'test_cli.py::test_ingest_and_archives',
    'test_cli.py::test_other_model_ids_see_nothing_through_the_cli',
    'test_cli.py::test_pdf_ingest_append_and_merge_archives',
    'test_cli.py::test_rebuild_keeps_the_leaves_and_replaces_the_summary_nodes',
    'test_cli.py::test_retrieve_explore_context',
    'test_cli_startup.py::test_a_write_leaves_a_snapshot_that_holds_it',
    'test_cli_startup.py::test_context_alone_reads_the_snapshot_the_ingest_left_and_loads_nothing_it_does_not_use',
    'test_doctor.py::test_a_build_killed_midway_is_invisible_and_repairable',
    'test_doctor.py::test_cli_ingest_killed_at_any_moment_then_doctor_repair',
    'test_doctor.py::test_doctor_reports_the_personal_write_queue_from_another_process',
    'test_erasure.py::test_input_the_privacy_filter_discards_is_not_kept_nor_lent_as_context',
    'test_export_import.py::test_export_and_import_through_the_cli',
    'test_export_import.py::test_round_trip_into_another_store_and_model_id[False]',
    'test_isolation.py::test_every_read_path_is_isolated_by_model_id',
    'test_jobs.py::test_an_uploaded_pdf_is_kept_before_its_temporary_copy_goes',
    'test_labels.py::test_sections_of_a_built_paper_have_readable_group_titles',
    'test_migrations_and_threads.py::test_readers_keep_working_while_one_thread_builds',
    'test_migrations_and_threads.py::test_the_query_embedding_cache_is_shared_safely_by_threads',
    'test_model_backends.py::test_cross_encoder_loads_from_a_local_directory_and_scores_on_0_1',
    'test_model_backends.py::test_drill_down_through_the_cross_encoder',
    'test_model_backends.py::test_flag_model_embedder_over_the_bundled_minilm',
    'test_model_backends.py::test_vectors_of_one_embedder_are_not_queried_with_another',
    'test_outline_tree.py::test_a_document_without_headings_keeps_the_similarity_rule',
    'test_outline_tree.py::test_a_store_of_binary_trees_migrates_and_rebuilds',
    'test_outline_tree.py::test_append_and_export_keep_the_outline_and_the_history',
    'test_outline_tree.py::test_explore_returns_titles_and_summaries_not_the_subtree_text',
    'test_outline_tree.py::test_rebuild_replans_over_stored_leaves_without_embedding_them',
    'test_outline_tree.py::test_sections_become_titled_nodes_and_no_node_mixes_two_sections',
    'test_outline_tree.py::test_the_root_reads_the_title_and_the_abstract_and_summaries_are_not_copied_up',
    'test_packaging.py::test_wheel_carries_every_package_and_installs',
    'test_page_preview.py::test_a_text_documents_passage_is_shown_in_its_section_without_the_overlap',
    'test_page_preview.py::test_an_ingested_pdf_is_kept_and_opens_after_the_upload_is_gone',
    'test_pdf.py::test_a_page_with_thousands_of_vector_marks_keeps_its_text',
    'test_personal_graph.py::test_a_valid_claude_reply_is_used_and_normalized',
    'test_personal_memory.py::test_each_input_is_embedded_once_and_input_queued_without_a_vector_is_embedded_by_the_worker',
    'test_personal_memory.py::test_input_that_cannot_be_queued_is_never_reported_as_success',
    'test_personal_retrieval.py::test_time_in_the_question_prefers_what_was_said_then',
    'test_privacy.py::test_classify_many_embeds_what_the_rules_leave_open_in_one_batch',
    'test_privacy.py::test_claude_prompt_carries_the_text_and_the_definitions_and_its_reply_is_used',
    'test_privacy.py::test_offline_accuracy_on_the_labelled_set',
    'test_private_files.py::test_a_new_store_is_private_from_its_first_byte',
    'test_private_files.py::test_doctor_reports_looser_modes_and_repair_tightens_them',
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560-CLI]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560-MCP]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560-OpenAI]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560-REST]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'my', 3,990 blanks, 'x'-CLI]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'my', 3,990 blanks, 'x'-MCP]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'my', 3,990 blanks, 'x'-OpenAI]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'my', 3,990 blanks, 'x'-REST]",
    'test_regex_time.py::test_the_text_paths_take_100k_adversarial_characters_in_linear_time[conflicts]',
    'test_regex_time.py::test_the_text_paths_take_100k_adversarial_characters_in_linear_time[redact]',
    'test_regex_time.py::test_the_text_paths_take_100k_adversarial_characters_in_linear_time[triples]',
    'test_research_memory.py::test_a_compaction_another_writer_finished_meanwhile_is_not_done_twice',
    'test_research_memory.py::test_compaction_flushes_findings_and_loses_nothing',
})


def mark_tiers(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.name
        if _drives_chromium(getattr(item, "module", None)):
            item.add_marker(pytest.mark.browser)
        if module in FAULT_MODULES:
            item.add_marker(pytest.mark.faults)
        if module in SLOW_MODULES or f"{module}::{item.name}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


def _drives_chromium(module: object) -> bool:
    browser = sys.modules.get("test_browser")
    return browser is not None and module is not None and (
        module is browser or any(getattr(module, name, None) is getattr(browser, name) for name in ("MISSING", "chromium")))
