"""One installer for every toolchain archive: download (verified, cached), safe extraction, atomic install."""
