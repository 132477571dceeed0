image = "from-b"
imgae = "typo"
