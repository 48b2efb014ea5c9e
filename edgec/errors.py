"""The errors edgec raises: one small hierarchy, each message written for the user to act on."""


class EdgecError(Exception):
    """Base class of every error edgec raises on purpose."""


class FrontendError(EdgecError):
    """The model file cannot be read or uses something the frontend does not support."""


class UnsupportedOpError(FrontendError):
    """The model uses op types that edgec does not implement."""


class ShapeError(EdgecError):
    """A shape or dtype does not fit: a missing input shape, a wrong input at run time, ..."""


class VerificationError(EdgecError):
    """The graph breaks an invariant of the IR (types, SSA, use-def links)."""


class PassError(EdgecError):
    """A pipeline string is malformed or a pass failed."""


class ToolchainError(EdgecError):
    """A compiler or archiver is missing or failed on generated code."""


class KernelError(EdgecError):
    """A kernel run by the interpreter did something its C rendering leaves undefined (an
    access out of its buffer, a float converted to an integer type that cannot hold it), or
    its threads did not all reach the same barriers."""
