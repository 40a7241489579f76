"""Privacy mechanisms (releases) and accounting (privacy maps), kept separate as in OpenDP."""
