# Attack: an exception message PostgreSQL cannot store as it is (a NUL character and a lone surrogate).
raise ValueError("bad\x00value \ud800 end")
