"""UserError: bad input or configuration, said in one message that names the file, row and field (or the config
key) and what to do about it. `python -m kgym_train` reports it without a traceback: the message goes to stderr
and to the file named by --error-file, and the process exits with protocol.EXIT_USER_ERROR, which kgym reports as
the user's error. Anything else that escapes is a bug in kgym_train and keeps its traceback.

A subclass of ValueError, so callers that catch ValueError still do."""


class UserError(ValueError):
    pass
