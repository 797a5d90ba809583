"""naming"""
