"""Local fakes of outside services, spoken to over real HTTP by the real clients."""
