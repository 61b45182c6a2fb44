"""The pages of the app: one name each, used for its file (``app_pages/<name>.py``), its session-key
prefix (``ui.state``), its strings (``page.<name>.*``) and its tests. The URL path is the one
shared links already use."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from attention_lab import tutorial

from .i18n import LANGS, t


@dataclass(frozen=True)
class PageInfo:
    name: str
    url: str  # the URL path of old shared links: /Playground, /Score_functions, …
    icon: str
    curriculum: str  # the concept ids a teacher finds here (CURRICULUM.md), e.g. "C1–C2, C4–C9"
    section: str = "explore"  # the navigation section: start, class, tutorial, explore, models, modern

    @property
    def file(self) -> str:
        return f"app_pages/{self.name}.py"


def id_ranges(ids) -> str:
    """Curriculum ids as a short list with ranges: {C1, C2, C3, C5} → "C1–C3, C5"."""
    nums = sorted({int(str(i).lstrip("C")) for i in ids})
    out, start = [], None
    for a, b in zip(nums, nums[1:] + [None], strict=True):
        start = a if start is None else start
        if b != a + 1:
            out.append(f"C{start}" if start == a else f"C{start}–C{a}")
            start = None
    return ", ".join(out)


TUTORIAL_CURRICULUM = id_ranges(c for ids in tutorial.CURRICULUM.values() for c in ids)

PAGES = (
    PageInfo("home", "", ":material/home:", "C1, C2, C4", "start"),
    PageInfo("tutorial", "Tutorial", ":material/school:", TUTORIAL_CURRICULUM, "tutorial"),
    PageInfo("playground", "Playground", ":material/tune:", "C1–C2, C4–C9, C11, C13–C16, C18–C19, C33, C39"),
    PageInfo("notations", "Notations", ":material/swap_horiz:", "C1, C2, C11, C34"),
    PageInfo("score_functions", "Score_functions", ":material/functions:", "C3, C5–C10, C19, C40"),
    PageInfo("masks", "Masks", ":material/grid_on:", "C11, C12, C35, C39"),
    PageInfo("multi_head", "Multi-head", ":material/view_column:", "C17, C20–C22, C36, C38"),
    PageInfo("self_vs_cross", "Self_vs_cross", ":material/compare_arrows:", "C13–C16, C26"),
    PageInfo("position", "Position", ":material/format_list_numbered:", "C23, C24, C37"),
    PageInfo("seq2seq", "Seq2seq", ":material/translate:", "C25–C27"),
    PageInfo("transformer_block", "Transformer_block", ":material/layers:", "C28–C31"),
    PageInfo("vision_transformer", "Vision_Transformer", ":material/image:", "C32"),
    PageInfo("trained_model", "Trained_model", ":material/psychology:", "C15, C17, C20, C23–C24 in a trained encoder",
             "models"),
    # attention as today's decoder language models run it (issue 22)
    PageInfo("kv_cache", "KV_cache", ":material/keyboard_tab:", "C11, C20–C21", "modern"),
    PageInfo("kv_sharing", "KV_sharing", ":material/call_split:", "C20–C21",
             "modern"),
    PageInfo("llm_positions", "LLM_positions", ":material/rotate_right:", "C23–C24, C37", "modern"),
    PageInfo("long_context", "Long_context", ":material/width_wide:", "C11–C12, C28",
             "modern"),
    PageInfo("tiled_attention", "Tiled_attention", ":material/grid_view:", "C28", "modern"),
    PageInfo("linear_attention", "Linear_attention", ":material/linear_scale:", "C4, C28",
             "modern"),
    PageInfo("mla", "MLA", ":material/compress:", "C20–C21", "modern"),
    PageInfo("sinks_gates", "Sinks_gates_caps", ":material/filter_alt:", "C6, C10–C11", "modern"),
    PageInfo("sparse", "Sparse_attention", ":material/filter_list:", "C11, C28", "modern"),
    PageInfo("diff", "Differential_attention", ":material/difference:", "C4, C20", "modern"),
    PageInfo("delta_rule", "Gated_DeltaNet", ":material/memory:", "C4, C28", "modern"),
    PageInfo("language_model", "Language_model", ":material/edit_note:",
             "C11, C20, C23–C24 in a trained decoder", "models"),
    # a live class: the teacher asks from the scenario on screen, the students answer (issue 37)
    PageInfo("live_class", "Class", ":material/groups:", "C4–C6 asked of a class", "class"),
)
SECTIONS = ("start", "class", "tutorial", "explore", "models", "modern")
PAGE_BY_NAME = {p.name: p for p in PAGES}


@lru_cache(maxsize=len(LANGS))  # the settings admit only LANGS
def offer_words(lang: str) -> tuple[dict[str, str], dict[str, str]]:
    """The words of the offer to go back, for every page (by URL path) and lesson (by id) in ``lang``: built once per
    language per server (in app.py, a cache was made anew by every run of the script, and the lessons read again)."""
    pages = {p.url: t("mem.page", lang, page=t(f"page.{p.name}.title", lang)) for p in PAGES if p.url}
    lessons = {x.id: t("mem.tutorial", lang, lesson=tutorial.lesson_title(x.id, lang)) for x in tutorial.LESSONS}
    return pages, lessons
