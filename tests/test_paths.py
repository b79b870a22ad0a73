from forest.paths import child_path, common_ancestor_path, path_ids


def test_common_ancestor_compares_whole_ids():
    assert common_ancestor_path(["1/5/12/", "1/5/18/"]) == "1/5/"
    assert common_ancestor_path(["1/5/", "1/50/"]) == "1/"  # not the string prefix "1/5"
    assert common_ancestor_path(["1/5/", "1/5/12/"]) == "1/5/"  # an ancestor of the other
    assert common_ancestor_path(["1/5/", "2/7/"]) == ""  # different trees
    assert common_ancestor_path(["3/"]) == "3/"
    assert common_ancestor_path([]) == ""


def test_path_helpers():
    assert path_ids("1/5/12/") == [1, 5, 12]
    assert child_path("1/5/", 12) == "1/5/12/"
    assert child_path(None, 3) == "3/"
