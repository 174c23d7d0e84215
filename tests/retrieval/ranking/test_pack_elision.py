"""A pack never spends its budget on the same words twice: a text of several lines (a summary) leaves
out the lines that items packed before it already hold, and is skipped when nothing is left."""

from __future__ import annotations

from retrieval.ranking import PackCandidate, pack_context, token_counter

SUMMARY = (
    "Summary of 3 related memories (2023-05-08):\n"
    "- Caroline: I went to a support group yesterday.\n"
    "- Melanie: I painted a lake at sunrise.\n"
    "- Caroline: The group meets every Tuesday."
)


def test_a_summary_after_its_member_leaves_out_the_members_line():
    counter = token_counter()
    member = PackCandidate("m1", "2023-05-08 · episodic · chat", "Caroline: I went to a support group yesterday.")
    summary = PackCandidate("s", "2023-05-08 · episodic · chat", SUMMARY)
    pack = pack_context([member, summary], 5, 1000, counter)
    assert [item.id for item in pack.items] == ["m1", "s"]
    assert pack.context_text.count("I went to a support group yesterday.") == 1
    assert "I painted a lake at sunrise." in pack.context_text and "every Tuesday" in pack.context_text
    assert pack.items[1].shortened  # the pack says the summary is not whole


def test_a_summary_whose_every_line_is_packed_is_skipped():
    counter = token_counter()
    lines = SUMMARY.split("\n")[1:]
    members = [PackCandidate(f"m{i}", "h", line.removeprefix("- ")) for i, line in enumerate(lines)]
    pack = pack_context([*members, PackCandidate("s", "h", SUMMARY)], 10, 1000, counter)
    assert [item.id for item in pack.items] == ["m0", "m1", "m2"]
