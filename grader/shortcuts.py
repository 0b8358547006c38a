"""Whole-solution shortcuts: what an exercise's function must not call while it is graded.

``BANNED[exercise]`` maps a module prefix to names. While the learner's function for that
exercise runs, ``grader.sandbox_kernel`` watches every call it makes (``sys.setprofile``):
a Python function counts when its module is under the prefix and one part of its qualified
name is listed (so ``CausalSelfAttention.forward`` counts as ``CausalSelfAttention``); a
builtin counts by its name alone, as no learner code is a builtin. ``grader.judge`` then
gives the exercise no points. Building blocks (``torch.softmax`` inside ``attention``) and
other exercises' shortcuts stay allowed.
"""

_SCORE_TEMPLATES = {
    "attnlib.patterns": {"template_score", "offset_template", "column_template", "repeat_templates"}
}

BANNED: dict[str, dict[str, set[str]]] = {
    "softmax": {
        "torch": {
            "softmax",
            "log_softmax",
            "_softmax",
            "_log_softmax",
            "special_softmax",
            "special_log_softmax",
            "Softmax",
            "LogSoftmax",
        },
        "scipy.special": {"softmax", "log_softmax"},
        "attnlib": {"softmax_weights"},
    },
    "attention": {
        "torch": {
            "scaled_dot_product_attention",
            "MultiheadAttention",
            "multi_head_attention_forward",
        },
        "attnlib": {"CausalSelfAttention"},
    },
    "causal_mask": {"attnlib": {"causal_mask"}},
    "self_score": _SCORE_TEMPLATES,
    "previous_token_score": _SCORE_TEMPLATES,
    "sink_score": _SCORE_TEMPLATES,
    "induction_score": _SCORE_TEMPLATES,
}

TAMPERED = "sys.setprofile"  # recorded when the graded function switched the profiler off
