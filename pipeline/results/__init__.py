"""What a leg run produced, as data: its record and where its build time went."""
