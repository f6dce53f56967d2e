"""Events: components say what happened to an object (a refused route, a failing probe).

``folding`` is pure (which recordings are one Event, expiry); ``recorder`` is a
component's one writer; ``expiry`` is the master's sweep of old Events.
"""
