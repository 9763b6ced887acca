"""Why staging left a hand-in, or a module of it, ungraded, in a few words: the cause staging recorded as data
(``stage.py``'s ``Staged.cause``, the module errors) said alike by the class list (``pages/class_list.py``) and by
``grade export`` and ``grade lti push``, which leave such a score blank (``export/ungraded.py``;
tests/integration/test_decisions.py).
"""
from __future__ import annotations

from .hand_in_sizes import MAX_ARCHIVE, MAX_ENTRIES, MAX_NOTEBOOK, MAX_UNPACKED, words

#: why a submission was not graded at all (intake/stage.py's Staged.cause)
NOT_GRADED = {
    "corrupt": "corrupt zip", "empty_archive": "empty zip", "empty_folder": "empty folder",
    "no_modules": "none of the module files in it", "several_copies": "several copies of the modules",
    "symlink": "a symbolic link, not the files", "unsupported": "not a folder, .zip or notebook",
    "unreadable": "unreadable hand-in", "too_many_entries": f"zip with too many entries (over {MAX_ENTRIES})",
    "too_large": f"zip unpacking to over {words(MAX_UNPACKED)}", "zip_bomb": "zip bomb",
    # the size limits, checked before a hand-in is read (intake/hand_in_sizes.py)
    "notebook_too_large": f"notebook over {words(MAX_NOTEBOOK)}", "archive_too_large": f"zip over {words(MAX_ARCHIVE)}",
    "folder_too_large": f"folder over {words(MAX_UNPACKED)}",
    "too_many_files": f"folder of over {MAX_ENTRIES} files and folders",
    "staging_error": "the grader failed while staging it (grader_errors.log)",
    # what was handed in (intake/discover.py, intake/stage.py)
    "unsupported_archive": "an archive of a kind not unpacked (not .zip or .tar.gz)", "not_code": "not code (a note?)",
    "single_file": "a single .py not named after a module", "empty_file": "an empty file",
    "several_hand_ins": "several hand-ins under one name", "broken_notebook": "broken notebook",
}
#: why a module was not graded (staging's module errors)
MODULE = {"not_utf8": "not UTF-8", "broken_notebook": "broken notebook", "symlink": "a symbolic link",
          "too_large": "file too large", "unreadable": "unreadable file", "missing": "missing"}
