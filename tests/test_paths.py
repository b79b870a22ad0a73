from forest.storage.paths import child_path, common_ancestor_path, path_ids


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


def test_positions_from_parents():
    from forest.storage.paths import positions_from_parents

    import pytest

    # 0,1 under 3; 2 under 4; 3 under 4; 5 is a lone root.
    paths, depths = positions_from_parents([3, 3, 4, 4, None, None])
    assert paths == [[4, 3, 0], [4, 3, 1], [4, 2], [4, 3], [4], [5]]
    assert depths == [2, 2, 1, 1, 0, 0]
    with pytest.raises(ValueError, match="parents must come after"):
        positions_from_parents([None, 0])
