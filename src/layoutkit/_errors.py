"""The exception every layoutkit function raises for bad input."""


class LayoutError(ValueError):
    """Raised for any invalid layout, shape, index, buffer or argument.

    It is a ``ValueError``, so code that already catches ``ValueError`` keeps
    working. Messages name the offending argument, the value given and what
    was expected.
    """
