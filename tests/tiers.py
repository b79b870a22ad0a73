"""The test tiers. `make test` runs everything; `make test-fast` runs
`-m "not slow and not browser and not faults"`. tests/conftest.py marks each collected test here:
- browser: its module drives headless Chromium (it imports tests/test_browser.py's driver or skip);
- faults: its module kills real writer processes (test_faults.py, test_faults_server.py);
- slow: measured at 1 s or more of CPU time (the test's process and the processes it starts,
  setup and teardown included). CPU rather than wall time, so a busy machine does not move a test
  between tiers; on the loaded machine it was measured on, 1 s of CPU took 2-20 s of wall time.
  Re-measure with `python bench/bench_test_tiers.py` and update the lists below; a module listed
  whole has only slow tests (or, for the workbench's AppTest modules, only slow tests measured).
"""
from __future__ import annotations

import sys

import pytest

FAULT_MODULES = frozenset({"test_faults.py", "test_faults_server.py"})
SLOW_MODULES = frozenset({
    "test_workbench.py",
    "test_workbench_actions.py",
    "test_doctor.py",
    "test_packaging.py",
    "test_private_files.py",
    "test_reconcile_page.py",
})
SLOW_TESTS = frozenset({  # "file::test name", parameters included
    "test_agent.py::test_ask_runs_to_an_answer_and_serializes_the_trace",
    "test_agent.py::test_claude_decides_with_the_seed_prompt_and_bad_replies_fall_back",
    "test_agent.py::test_offline_loop_explores_best_first_then_answers_from_cited_leaves",
    "test_agent.py::test_the_user_can_override_the_policy",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[JSON nested 1,000 deep-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: /dev/zero-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: another format-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: crafted settings (documents [\"x\"])-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: not JSON-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: over 100,000 nodes-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[archive import: passages over max_document_chars (20,000)-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[corrupt PDF (random bytes)-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[document over max_document_chars (20,000)-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[empty / whitespace document-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[empty / whitespace document-MCP]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[empty / whitespace document-workbench]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[ingest: a named pipe (FIFO) instead of a file-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[personal memory: empty input-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[personal memory: input over 4,000 characters-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[personal memory: user_id with a control character-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[threshold outside 0-1 (5, NaN)-CLI]",
    "test_bad_input_faces.py::test_bad_input_gives_a_clear_error_and_writes_nothing[unsupported file type (.docx)-CLI]",
    "test_build.py::test_an_archive_cut_by_the_recursive_splitter_grows_the_same_way",
    "test_build.py::test_build_writes_a_consistent_tree_and_one_vector_per_node",
    "test_build.py::test_chinese_text_keeps_its_language_and_the_length_limit",
    "test_build.py::test_leaves_are_whole_paragraphs_embedded_after_their_title_and_headings",
    "test_build.py::test_threshold_keeps_unrelated_topics_apart",
    "test_cli.py::test_ask_over_a_chosen_archive",
    "test_cli.py::test_doctor_and_config",
    "test_cli.py::test_errors_are_one_line_on_stderr[args4-no such file]",
    "test_cli.py::test_ingest_and_archives",
    "test_cli.py::test_other_model_ids_see_nothing_through_the_cli",
    "test_cli.py::test_pdf_ingest_append_and_merge_archives",
    "test_cli.py::test_rebuild_keeps_the_leaves_and_replaces_the_summary_nodes",
    "test_cli.py::test_retrieve_explore_context",
    "test_cli_startup.py::test_a_write_leaves_a_snapshot_that_holds_it",
    "test_cli_startup.py::test_context_alone_reads_the_snapshot_the_ingest_left_and_loads_nothing_it_does_not_use",
    "test_erasure.py::test_a_deleted_archive_leaves_no_byte_of_its_document",
    "test_erasure.py::test_input_the_privacy_filter_discards_is_not_kept_nor_lent_as_context",
    "test_export_import.py::test_an_archive_with_malformed_settings_breaks_no_other_tenants_delete",
    "test_export_import.py::test_cli_imports_are_bounded_and_deep_trees_are_walked_without_recursion",
    "test_export_import.py::test_export_and_import_through_the_cli",
    "test_export_import.py::test_round_trip_into_another_store_and_model_id[False]",
    "test_export_import.py::test_round_trip_into_another_store_and_model_id[True]",
    "test_fulltext_postgres.py::test_deleted_rows_leave_the_results_and_the_statistics",
    "test_fulltext_postgres.py::test_each_tenant_scores_as_if_alone",
    "test_fulltext_postgres.py::test_one_tenant_ranks_as_fts5",
    "test_fulltext_postgres.py::test_personal_memory_ranks_as_fts5_with_context_at_half_weight[2000]",
    "test_fulltext_postgres.py::test_personal_memory_ranks_as_fts5_with_context_at_half_weight[40]",
    "test_grow.py::test_a_failed_append_changes_nothing",
    "test_grow.py::test_an_append_from_another_process_in_between_is_detected",
    "test_grow.py::test_append_keeps_every_node_and_continues_merging",
    "test_grow.py::test_append_reuses_stored_vectors_and_embeds_only_new_text",
    "test_grow.py::test_appending_a_pdf_cites_its_pages",
    "test_grow.py::test_similar_archives_and_join_under_a_super_root",
    "test_isolation.py::test_every_read_path_is_isolated_by_model_id",
    "test_jobs.py::test_a_build_that_fails_after_the_read_leaves_no_kept_file",
    "test_jobs.py::test_an_uploaded_pdf_is_kept_before_its_temporary_copy_goes",
    "test_jobs.py::test_archives_take_the_documents_title_and_a_repeat_is_refused",
    "test_labels.py::test_sections_of_a_built_paper_have_readable_group_titles",
    "test_lexemes.py::test_every_code_point",
    "test_lexemes.py::test_porter_on_words_with_other_scripts_inside",
    "test_lexemes.py::test_random_mixed_script_text[False]",
    "test_lexemes.py::test_random_mixed_script_text[True]",
    "test_lexemes.py::test_real_corpora_as_indexed[False]",
    "test_lexemes.py::test_real_corpora_as_indexed[True]",
    "test_migrations_and_threads.py::test_readers_keep_working_while_one_thread_builds",
    "test_migrations_and_threads.py::test_the_query_embedding_cache_is_shared_safely_by_threads",
    "test_model_backends.py::test_cross_encoder_loads_from_a_local_directory_and_scores_on_0_1",
    "test_model_backends.py::test_drill_down_through_the_cross_encoder",
    "test_model_backends.py::test_flag_model_embedder_over_the_bundled_minilm",
    "test_model_backends.py::test_vectors_of_one_embedder_are_not_queried_with_another",
    "test_outline_tree.py::test_a_chinese_paper_keeps_its_language_in_titles_and_summaries",
    "test_outline_tree.py::test_a_document_without_headings_keeps_the_similarity_rule",
    "test_outline_tree.py::test_a_store_of_binary_trees_migrates_and_rebuilds",
    "test_outline_tree.py::test_append_and_export_keep_the_outline_and_the_history",
    "test_outline_tree.py::test_explore_returns_titles_and_summaries_not_the_subtree_text",
    "test_outline_tree.py::test_rebuild_replans_over_stored_leaves_without_embedding_them",
    "test_outline_tree.py::test_sections_become_titled_nodes_and_no_node_mixes_two_sections",
    "test_outline_tree.py::test_the_root_reads_the_title_and_the_abstract_and_summaries_are_not_copied_up",
    "test_page_preview.py::test_a_text_documents_passage_is_shown_in_its_section_without_the_overlap",
    "test_page_preview.py::test_an_ingested_pdf_is_kept_and_opens_after_the_upload_is_gone",
    "test_pdf.py::test_a_page_with_thousands_of_vector_marks_keeps_its_text",
    "test_pdf.py::test_pdf_leaves_carry_pages_sections_and_caption_kind",
    "test_personal_graph.py::test_a_valid_claude_reply_is_used_and_normalized",
    "test_personal_memory.py::test_a_question_in_the_first_person_gets_the_users_own_relation",
    "test_personal_memory.py::test_each_input_is_embedded_once_and_input_queued_without_a_vector_is_embedded_by_the_worker",
    "test_personal_memory.py::test_input_that_cannot_be_queued_is_never_reported_as_success",
    "test_personal_memory.py::test_queued_input_survives_a_killed_process",
    "test_personal_retrieval.py::test_time_in_the_question_prefers_what_was_said_then",
    "test_openai_provider.py::test_the_engine_summarizes_and_searches_with_the_openai_providers",
    "test_openai_provider.py::test_an_embedding_server_down_mid_ingest_fails_it_cleanly_and_keeps_nothing",
    "test_openai_provider.py::test_an_llm_down_mid_ingest_fails_it_cleanly_naming_the_url",
    "test_openai_provider.py::test_personal_writes_wait_in_the_queue_while_the_llm_is_down",
    "test_openai_provider.py::test_forest_models_lists_the_parts_and_checks_that_the_configured_ones_answer",
    "test_openai_provider.py::test_end_to_end_against_the_projects_own_chat_endpoint",
    "test_openai_provider.py::test_a_change_of_embedder_is_refused_until_forest_reembed_re_embeds_the_model_id[chroma]",
    "test_openai_provider.py::test_a_change_of_embedder_is_refused_until_forest_reembed_re_embeds_the_model_id[pgvector]",
    "test_openai_provider.py::test_a_change_of_embedder_is_refused_until_forest_reembed_re_embeds_the_model_id[qdrant]",
    "test_openai_provider.py::test_the_agent_decides_through_the_openai_llm",
    "test_openai_provider.py::test_a_model_server_down_is_a_503_naming_it_over_rest_not_a_stack_trace",
    "test_privacy.py::test_classify_many_embeds_what_the_rules_leave_open_in_one_batch",
    "test_privacy.py::test_claude_prompt_carries_the_text_and_the_definitions_and_its_reply_is_used",
    "test_privacy.py::test_offline_accuracy_on_the_labelled_set",
    "test_qdrant.py::test_doctor_repairs_a_lost_point_and_deleting_an_archive_leaves_none",
    "test_qdrant.py::test_the_engine_on_qdrant_finds_what_it_finds_on_chroma",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560-CLI]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560-MCP]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560-OpenAI]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560-REST]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'my', 3,990 blanks, 'x'-CLI]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'my', 3,990 blanks, 'x'-MCP]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'my', 3,990 blanks, 'x'-OpenAI]",
    "test_regex_time.py::test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message[adversarial regex input: 'my', 3,990 blanks, 'x'-REST]",
    "test_regex_time.py::test_the_text_paths_take_100k_adversarial_characters_in_linear_time[conflicts]",
    "test_regex_time.py::test_the_text_paths_take_100k_adversarial_characters_in_linear_time[privacy rules]",
    "test_regex_time.py::test_the_text_paths_take_100k_adversarial_characters_in_linear_time[redact]",
    "test_regex_time.py::test_the_text_paths_take_100k_adversarial_characters_in_linear_time[triples]",
    "test_repeated_writes.py::test_a_document_sent_again_under_its_name_returns_the_archive_built_before",
    "test_repeated_writes.py::test_a_repeat_that_arrives_while_the_first_call_still_builds_keeps_the_first",
    "test_research_memory.py::test_a_compaction_another_writer_finished_meanwhile_is_not_done_twice",
    "test_research_memory.py::test_a_session_turn_reconciles_conflicting_papers",
    "test_research_memory.py::test_compaction_flushes_findings_and_loses_nothing",
    "test_research_memory.py::test_compaction_with_claude_writes_its_findings",
    "test_server.py::test_every_tool_over_stdio_from_a_subprocess",
    "test_server.py::test_every_tool_over_streamable_http",
    "test_server.py::test_off_loopback_needs_a_token_on_every_route",
    "test_server.py::test_rest_parity_openapi_and_errors",
    "test_server.py::test_serve_on_a_public_address_refuses_a_weak_token",
    "test_store_owner.py::test_a_killed_owner_leaves_nothing_stale",
    "test_store_owner.py::test_a_second_server_on_the_store_is_refused_naming_chroma_run",
    "test_store_owner.py::test_a_second_workbench_on_the_store_says_why_it_cannot_open",
    "test_store_owner.py::test_a_slow_claude_ingest_holds_up_no_delete_or_doctor",
    "test_store_owner.py::test_a_writer_that_waits_too_long_names_the_one_holding_the_lock",
    "test_store_owner.py::test_cli_beside_a_server_works_through_the_owner_without_opening_chroma",
    "test_store_owner.py::test_commands_writing_together_all_finish_whichever_exits_first[0]",
    "test_store_owner.py::test_commands_writing_together_all_finish_whichever_exits_first[1]",
    "test_store_owner.py::test_commands_writing_together_all_finish_whichever_exits_first[2]",
    "test_store_owner.py::test_doctor_from_another_process_waits_for_an_append_in_progress",
    "test_vector_snapshot.py::test_a_damaged_snapshot_is_passed_over_for_chroma",
    "test_vector_snapshot.py::test_a_snapshot_answers_only_the_embedder_that_made_it",
    "test_vector_snapshot.py::test_a_write_discards_the_snapshot_before_it_reaches_chroma",
    "test_vector_snapshot.py::test_long_running_engines_neither_take_nor_read_snapshots",
    "test_vector_snapshot.py::test_the_next_command_reads_the_snapshot_a_command_left_and_gets_what_chroma_gave",
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
