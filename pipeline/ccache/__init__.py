"""ccache for a leg: its settings, compiler check, remote storage, statistics and the save decision."""
