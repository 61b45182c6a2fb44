"""Every session-state key of the app, in one registry.

Pages, building blocks and tests import their keys from here; no key is spelled as a string
literal anywhere else (a static test checks it). A key is ``<room>.<name>``: the room is a
page's name (``playground``, ``masks``, …), ``scenario`` for the numbers every page shares,
or ``settings`` for the sidebar. Keys made at run time (one per head, per matrix, …) are a
registry key plus a suffix: :func:`item`.
"""

from __future__ import annotations

from types import SimpleNamespace


def _room(room: str, names: str) -> SimpleNamespace:
    """``_room("masks", "window clicks").window == "masks.window"``; an unknown name raises."""
    return SimpleNamespace(**{n: f"{room}.{n}" for n in names.split()})


def item(key: str, *parts) -> str:
    """A key made at run time from a registry key: ``item(MULTI_HEAD.grid, 2) == "multi_head.grid.2"``."""
    return ".".join([key, *(str(p) for p in parts)])


def css_class(key: str) -> str:
    """The CSS class Streamlit gives the element of a widget key (used by the browser tests)."""
    return ".st-key-" + key.replace(".", "-")


# ------------------------------------------------------------------ settings (sidebar, every page)
SETTINGS = _room("settings", "_init lang seed device precision contrast")


def setting(name: str) -> str:
    """The plain session-state key of one setting (language, seed, device, precision)."""
    return getattr(SETTINGS, name)


def setting_widget(name: str) -> str:
    """The sidebar widget of one setting; its value is copied to :func:`setting` on change."""
    return "_w." + setting(name)


# ------------------------------------------------------------------ the frame (app.py): every page
# a11y: the document-wide accessibility element (ui/widgets/a11y.py)
FRAME = _room("frame", "a11y session_id guard cpu_spent link link_alone link_own kept kept_loaded resume memory forget "
              "forget_button present present_loaded present_leave present_map")

# ------------------------------------------------------------------ the scenario every page shares
SCENARIO_NAMES = ("tokens source mode embedding d_model qkv d_k d_v score d_a scale temperature causal pad blocked "
                  "convention query")
SCENARIO = _room("scenario", SCENARIO_NAMES + " overrides editor_version messages carry changed url_loaded "
                 "last_tokens last_source last_trace preset x_fold x_fold_open started")


def scenario_value(name: str) -> str:
    """The widget key of one scenario value (a name of attention_lab.scenario.DEFAULTS)."""
    return getattr(SCENARIO, name)


def scenario_kept(name: str) -> str:
    """Where a scenario value is kept between runs (plain session state; its widget is seeded from it)."""
    return item("scenario.kept", getattr(SCENARIO, name).split(".", 1)[1])


def scenario_picker(name: str) -> str:
    """A select box over token labels whose chosen index is kept under :func:`scenario_value`."""
    return item("scenario.picker", name)


def editor(name: str, signature: str, version: int) -> str:
    """A matrix editor's widget key; it changes (so edits start afresh) with its signature."""
    return item("scenario.editor", name, signature, version)


EDITOR_PREFIX = "scenario.editor."


def last_valid(widget_key: str) -> str:
    """The last valid value of an editor, kept when a cell becomes invalid."""
    return item("scenario.last_valid", widget_key)


# ------------------------------------------------------------------ pages
PLAYGROUND = _room("playground", "clicks tab tab_id upload chart_weights chart_mask mask_clear fig_alpha fig_contrib "
                   "dl_csv dl_json pipeline view view_loaded present step_start step_prev step_next step_all arrow_keys "
                   "lesson_groups lesson_panels lesson_present code address inspector qr link_host lesson_teacher")
PIPELINE = _room("pipeline", "scores scaled masked weights output")  # suffixes of a pipeline's chart keys
NOTATIONS = _room("notations", "clicks selected row col right wrong")
SCORE_FUNCTIONS = _room("score_functions", "scores weights cos_dot cos_normed cos_cos exp_d exp_var exp_hist exp_plot "
                        "c19_right c19_wrong")
MASKS = _room("masks", "clicks chart window mask_clear step order c11 full_core full_naive")
MULTI_HEAD = _room("multi_head", "d_model heads pick grid pipeline wrong_right wrong_wrong paper_out paper_mha "
                   "source model_layer model_grid model_pick english")
SELF_VS_CROSS = _room("self_vs_cross", "weights layer query")
POSITION = _room("position", "d perm shuffle shuffles n perm_n sa_px p_sa_x sin learned same_x same_xp")
SEQ2SEQ = _room("seq2seq", "task att input task_of_input train asked loss map t_slider e alpha vectors measure curve")
TRANSFORMER_BLOCK = _room("transformer_block", "act map measure complexity time mem")
VISION_TRANSFORMER = _room("vision_transformer", "choice upload image source error P cls query cols overlay grid "
                           "use_cls clicks weights gen_choice gen_seed new_images layer probs")
TUTORIAL = _room("tutorial", "lesson progress answer tries reveal panel feedback check apply setup loaded url_loaded "
                 "notes pick prev next reload clicks weights pipeline inspector alpha contrib mask_chart mask_clear logits "
                 "heads sa_px p_sa_x rope_rotation rope_distance step step_prev step_next arrow_keys new_row "
                 "cache_keys cache_values latent rope_key full_keys state write grid lm_clicks lm_layer lm_head "
                 "lm_map")  # the tutorial's own keys
CODE_EXPORT = _room("code_export", "download")  # "copy as code": one download button per key prefix
TRAINED_MODEL = _room("trained_model", "text preset layer head grid head_view heatmap pipeline patterns sort clicks "
                      "open_top sentence chosen url_loaded")

# ------------------------------------------------------------------ a live class (ui/live.py, app_pages/live_class.py)
LIVE = _room("live", "seat version followed keeper teacher code nick join start kind query key ask reveal follow target "
             "pause anonymous export end end_sure host qr answer send leave url_loaded refused asked messages teacher_version "
             "work look show hide exercise")

# ------------------------------------------------------------------ attention in today's LLMs (issue 22)
KV_CACHE = _room("kv_cache", "d_model heads kv_heads rope step step_prev step_next arrow_keys n new_row keys values full "
                 "cost last")
KV_SHARING = _room("kv_sharing", "heads kv_heads d_model weights groups tokens batch dtype table chart")
LLM_POSITIONS = _room("llm_positions", "kind base pairing pair_pos pair_dim rotation distance alibi_heads alibi d perm "
                      "sa_px p_sa_x shuffle shuffles perm_n")
LONG_CONTEXT = _room("long_context", "n window sinks layers mask reach memory chart table_window table_sinks last "
                     "schedule sched_n sched_table page_size lengths max_len fork tables paged_table")
TILED_ATTENTION = _room("tiled_attention", "n block_q block_k step step_prev step_next arrow_keys tiles tile scores ml "
                        "partial output reference chart last")
LINEAR_ATTENTION = _room("linear_attention", "causal quadratic associative softmax linear cost")
LANGUAGE_MODEL = _room("language_model", "prompt text preset temperature top_k top_p seed n_new max_new one run reset keys "
                       "layer head grid heatmap pipeline heads sort open_top clicks gen_layer gen_maps bars_model "
                       "bars_sampled off_heads off_layers window sinks bars_before bars_after measure lens running tab tab_id "
                       "model local_window local_block local_maps qk_maps blocks")
MLA = _room("mla", "d_model heads d_c d_r latent rope_key explicit absorbed table last")
SINKS_GATES = _room("sinks_gates", "query sink cap rows logits cap_chart gate")
SPARSE = _room("sparse", "top_k chooser head index logits sparse full cost")
DIFF = _room("diff", "layer a b head w1 w2 diff")
DELTA_RULE = _room("delta_rule", "rule beta g step step_prev step_next arrow_keys n state write retrieval outputs hybrid "
                   "last")
