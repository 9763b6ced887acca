"""Turn what students hand in (folders, .zip archives, notebooks) into clean submission folders."""
